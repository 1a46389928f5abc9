package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"tug/internal/api"
	"tug/internal/cli/cmdflag"
)

const restartUsage = `usage: tug restart [-c CONTAINER] [-n NAMESPACE] [--socket PATH] POD

Restarts POD's running containers (or only CONTAINER) as a failed
liveness probe restarts one: each is stopped with the pod's grace period,
its preStop hook first, and started again at once as a new attempt
(restartCount + 1, a Killing event "restart requested by tug restart",
then Started), whatever the pod's restartPolicy and crash back-off. The
pod keeps its sandbox, IP and volumes, and a restart asked for this way
never counts against an update (rollback). Init containers do not restart;
sidecars do.

`

// restartArgs are the parsed arguments of "tug restart".
type restartArgs struct {
	socket, namespace, pod, container string
}

// parseRestartArgs parses the arguments of "tug restart". ok is false when
// the command must stop, with code its exit code (parseFlags's).
func parseRestartArgs(args []string, defaultSocket string, stdout, stderr io.Writer) (a restartArgs, code int, ok bool) {
	fs := cmdflag.New("restart")
	socket, ns := podFlags(fs, defaultSocket)
	fs.StringVarP(&a.container, "container", "c", "", "restart only this `container`")
	pos, code, ok := cmdflag.Parse(fs, args, restartUsage, stdout, stderr)
	if !ok {
		return a, code, false
	}
	if len(pos) != 1 {
		return a, cmdflag.UsageError(stderr, restartUsage, "tug restart takes one pod name"), false
	}
	a.socket, a.namespace, a.pod = *socket, *ns, pos[0]
	return a, 0, true
}

// restartCmd is "tug restart". It returns the exit code: 1 when tug cannot
// be asked or refuses, 2 for a usage error.
func (e Env) restartCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	a, code, ok := parseRestartArgs(args, e.Socket, stdout, stderr)
	if !ok {
		return code
	}
	c := &api.Client{SocketPath: a.socket}
	ans, err := c.Restart(ctx, a.namespace, a.pod, a.container)
	if err != nil {
		fmt.Fprintln(stderr, "tug:", err)
		return 1
	}
	fmt.Fprintln(stdout, escape(fmt.Sprintf("%s: restarting %s", ans.Pod, strings.Join(ans.Containers, ", "))))
	return 0
}
