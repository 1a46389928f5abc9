package cli

import (
	"context"
	"fmt"
	"io"
	"os/signal"
	"strings"
	"syscall"

	"tug/internal/api"
	"tug/internal/cli/cmdflag"
	"tug/internal/podview"
)

const logsUsage = `usage: tug logs [-f] [-p] [--tail N] [--since D] [--timestamps] [-c CONTAINER] [-n NAMESPACE] [--socket PATH] POD

Prints a container's output as "kubectl logs" does, from its log files
(the rotated ones too), through tug's API socket. Without -c, a pod with
several containers shows its "kubectl.kubernetes.io/default-container" or
its first container, and says so on stderr. -f follows the output, across
rotations, until the container stops (or Ctrl-C); -p prints the previous
attempt's output instead.

`

// defaultContainerAnnotation names the container kubectl logs picks when
// none is given.
const defaultContainerAnnotation = "kubectl.kubernetes.io/default-container"

// logsCmd is "tug logs". It returns the exit code: 1 when tug cannot be
// asked or refuses, 2 for a usage error.
func (e Env) logsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := cmdflag.New("logs")
	socket, ns := podFlags(fs, e.Socket)
	var container string
	var o api.LogOptions
	fs.StringVarP(&container, "container", "c", "", "the `container` (default: the only one, the default-container annotation's, or the first)")
	fs.BoolVarP(&o.Follow, "follow", "f", false, "follow the output until the container stops")
	fs.BoolVarP(&o.Previous, "previous", "p", false, "print the previous attempt's output")
	fs.IntVar(&o.TailLines, "tail", -1, "print only the last `N` lines (-1: all)")
	fs.DurationVar(&o.Since, "since", 0, "print only lines newer than this `duration` (5s, 2m, 3h)")
	fs.BoolVar(&o.Timestamps, "timestamps", false, "prefix each line with its RFC3339Nano time")
	pos, code, ok := cmdflag.Parse(fs, args, logsUsage, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return cmdflag.UsageError(stderr, logsUsage, "tug logs takes one pod name")
	}
	if o.Since < 0 {
		return cmdflag.UsageError(stderr, logsUsage, "--since must be positive")
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	c := &api.Client{SocketPath: *socket}
	if container == "" {
		v, err := c.Pod(ctx, *ns, pos[0])
		if err != nil {
			fmt.Fprintln(stderr, "tug:", err)
			return 1
		}
		container = defaultContainer(v, stderr)
	}
	o.Container = container
	if err := c.Logs(ctx, *ns, pos[0], o, stdout); err != nil && ctx.Err() == nil {
		fmt.Fprintln(stderr, "tug:", err)
		return 1
	}
	return 0
}

// defaultContainer is the container kubectl logs shows when none is
// named: the one the default-container annotation names, or the first
// container; with more than one container it says which on stderr, as
// kubectl does.
func defaultContainer(v podview.View, stderr io.Writer) string {
	var all []string
	for _, c := range v.Spec.Containers {
		all = append(all, c.Name)
	}
	for _, c := range v.Spec.InitContainers {
		all = append(all, c.Name+" (init)")
	}
	name := v.Metadata.Annotations[defaultContainerAnnotation]
	if name != "" {
		return name
	}
	if len(v.Spec.Containers) == 0 {
		return ""
	}
	name = v.Spec.Containers[0].Name
	if len(all) > 1 {
		fmt.Fprintf(stderr, "Defaulted container %q out of: %s\n", name, strings.Join(all, ", "))
	}
	return name
}
