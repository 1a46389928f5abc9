// Command tug is the node agent: it runs Kubernetes-style static pods from a
// manifest directory and a URL on containerd. This package is the only place that
// builds concrete components and connects them; the client subcommands are
// package cli's.
//
//	tug run [flags]          run the agent
//	tug validate [--policy LEVEL] PATH...  check manifests, print file:line:col errors
//	tug pods                 list pods and broken manifests (from the agent)
//	tug inspect POD          print one pod and its status as YAML
//	tug events [-w] [POD]    list (and follow) the agent's recent events
//	tug sign --key KEY FILE  write a signed bundle for --manifest-verify-key
//	tug version              print the version
//	tug help [COMMAND]       list the commands, or COMMAND's flags
package main

import (
	"context"
	"errors"

	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"tug/internal/cli"
	"tug/internal/config"
	"tug/internal/policy"
)

// version is set at build time with -ldflags "-X main.version=...";
// without it, buildVersion says what the Go toolchain recorded.
var version = ""

// buildTime is the commit's time in Unix seconds, set at build time with
// -ldflags "-X main.buildTime=..." (the Makefile's BUILD_TIME); without it,
// builtAt reads the time the toolchain recorded of the commit.
var buildTime = ""

// builtAt returns the time of the commit tug was built from, or the zero
// time when none is known: the start of tug's time floor.
func builtAt() time.Time {
	if sec, err := strconv.ParseInt(buildTime, 10, 64); err == nil && sec > 0 {
		return time.Unix(sec, 0).UTC()
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.time" {
				if t, err := time.Parse(time.RFC3339, s.Value); err == nil {
					return t.UTC()
				}
			}
		}
	}
	return time.Time{}
}

// buildVersion returns version, or else the module version, the VCS
// revision (and whether the tree had changes) and the Go version that the
// toolchain recorded in the binary: "dev (3b2ce15, modified, go1.24.1)".
func buildVersion() string {
	if version != "" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	v := info.Main.Version
	if v == "" || v == "(devel)" {
		v = "dev"
	}
	var parts []string
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision" && len(s.Value) >= 7:
			parts = append(parts, s.Value[:7])
		case s.Key == "vcs.modified" && s.Value == "true":
			parts = append(parts, "modified")
		}
	}
	parts = append(parts, info.GoVersion)
	return v + " (" + strings.Join(parts, ", ") + ")"
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// commands are the subcommands "tug help" lists, in its order: "run", the
// client commands of package cli, "help". Their Env comes from the
// agent's default configuration and admission policy.
func commands() []cli.Command {
	cfg := config.Default()
	env := cli.Env{
		Socket:  cfg.SocketPath(),
		Version: buildVersion(),
		Stdin:   os.Stdin,
		Policy: func(levels map[string]string, allowPrivileged, allowHostStateMounts bool) *policy.Policy {
			c := config.Default()
			c.AllowPrivileged, c.AllowHostStateMounts = allowPrivileged, allowHostStateMounts
			return newPolicy(c, levels, nil)
		},
	}
	all := []cli.Command{{Name: "run", Synopsis: "[flags]        run the agent (tug run --help lists the flags)", Run: runCmd},
		{Name: "check-config", Synopsis: "[run flags]  check the configuration as tug run would read it", Run: checkConfigCmd}}
	all = append(all, cli.Commands(env)...)
	return append(all, cli.Command{Name: "help", Synopsis: "[COMMAND]     list the commands, or print COMMAND's usage and flags (as COMMAND --help)"})
}

// run dispatches a subcommand and returns the process exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage())
		return 2
	}
	name := args[0]
	switch name {
	case "logger":
		// Run by containerd's shim for each container (binary log driver):
		// fd 3 is stdout, fd 4 stderr, fd 5 is closed when ready. Not
		// listed: no one runs it by hand.
		if err := runLogger(args[1:]); err != nil {
			fmt.Fprintln(stderr, "tug:", err)
			return 1
		}
		return 0
	case "pause":
		// PID 1 of the PID namespace a pod with shareProcessNamespace
		// shares (podruntime's holder). Not listed: containerd runs it.
		return runPause()
	case "__complete":
		// Run by the scripts of "tug completion" for the word being
		// completed. Not listed.
		cfg := config.Default()
		return cli.Complete(context.Background(), commands(), cfg.SocketPath(), args[1:], stdout)
	case "-h", "--help":
		name = "help"
	}
	if name == "help" {
		switch {
		case len(args) < 2:
			fmt.Fprint(stdout, usage())
			return 0
		case len(args) > 2:
			fmt.Fprintf(stderr, "tug: help takes one command\n%s", usage())
			return 2
		case args[1] == "help":
			fmt.Fprint(stdout, usage())
			return 0
		}
		name, args = args[1], []string{args[1], "--help"}
	}
	for _, c := range commands() {
		if c.Name == name && c.Run != nil {
			return c.Run(context.Background(), args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "tug: unknown command %q\n%s", name, usage())
	return 2
}

// runCmd is "tug run".
func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	launchSelf(args, stderr)
	if selfUpdateTestFault == "exit" {
		fmt.Fprintln(stderr, "tug: test fault: exiting at start")
		return 1
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	defer startProfiles(stderr)()
	err := runAgent(ctx, args, stdout, stderr)
	switch {
	case errors.Is(err, pflag.ErrHelp):
		fmt.Fprint(stdout, runUsage)
		config.PrintFlags(stdout)
		return 0
	case isRestart(err):
		// systemd (Restart=always) starts tug again, and the launcher
		// runs the binary the current link names.
		fmt.Fprintln(stderr, "tug: exiting to restart into the self-update's binary; pods keep running")
		return 0
	case err != nil:
		fmt.Fprintln(stderr, "tug:", err)
		return 1
	}
	return 0
}

const runUsage = `usage: tug run [flags]

Runs the agent: the pods of the manifest directory and of --manifest-url on
containerd, until SIGTERM or SIGINT (the pods keep running). Flags may also
come from a YAML file (--config) whose keys are the flags' names; a flag on
the command line wins over the file.

`

// usage lists the commands.
func usage() string {
	var b strings.Builder
	b.WriteString("usage:\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "  tug %s %s\n", c.Name, c.Synopsis)
	}
	return b.String()
}
