// Command tug is the node agent: it runs Kubernetes-style static pods from a
// manifest directory and a URL on containerd. This package is the only place that
// builds concrete components and connects them.
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
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"tug/internal/config"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// command is one subcommand of tug.
type command struct {
	name, synopsis string
	// run runs it with the arguments after its name and returns the exit
	// code; "--help" prints its usage and flags on stdout and returns 0.
	run func(args []string, stdout, stderr io.Writer) int
}

// commands are the subcommands "tug help" lists, in its order.
var commands = []command{
	{"run", "[flags]        run the agent (tug run --help lists the flags)", runCmd},
	{"validate", "[--policy LEVEL] PATH...  check manifest files or directories\n" +
		"                         (and the admission policy of LEVEL: privileged, baseline, restricted)", validate},
	{"pods", "              list the pods and broken manifests of the running agent", func(args []string, stdout, stderr io.Writer) int {
		return listPods(context.Background(), args, stdout, stderr)
	}},
	{"inspect", "POD        print one pod and its status as YAML", func(args []string, stdout, stderr io.Writer) int {
		return inspectPod(context.Background(), args, stdout, stderr)
	}},
	{"logs", "[-f] [-p] [--tail N] [--since D] [--timestamps] [-c CONTAINER] POD  print a container's output", logsCmd},
	{"node", "              show the node's pressure conditions (MemoryPressure, DiskPressure, PIDPressure)", func(args []string, stdout, stderr io.Writer) int {
		return showNode(context.Background(), args, stdout, stderr)
	}},
	{"events", "[-w] [POD]  list the agent's recent events, -w to follow them", func(args []string, stdout, stderr io.Writer) int {
		return eventsCmd(context.Background(), args, stdout, stderr)
	}},
	{"rollback", "POD       return a pod to its last good spec", func(args []string, stdout, stderr io.Writer) int {
		return rollbackCmd(context.Background(), args, stdout, stderr)
	}},
	{"history", "POD        list a pod's last specs and what became of them", func(args []string, stdout, stderr io.Writer) int {
		return historyCmd(context.Background(), args, stdout, stderr)
	}},
	{"sign", "--key KEY FILE...  write FILE.signed, the signed bundle --manifest-verify-key checks", signCmd},
	{"version", "           print the version", versionCmd},
	{"help", "[COMMAND]     list the commands, or print COMMAND's usage and flags (as COMMAND --help)", nil},
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
	for _, c := range commands {
		if c.name == name && c.run != nil {
			return c.run(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "tug: unknown command %q\n%s", name, usage())
	return 2
}

// runCmd is "tug run".
func runCmd(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	defer startProfiles(stderr)()
	err := runAgent(ctx, args, stdout, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, runUsage)
		config.PrintFlags(stdout)
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

// versionCmd is "tug version".
func versionCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tug version", flag.ContinueOnError)
	pos, code, ok := parseFlags(fs, args, "usage: tug version\n\nPrints tug's version.\n", stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return usageError(stderr, "usage: tug version\n", "tug version takes no arguments")
	}
	fmt.Fprintln(stdout, "tug", version)
	return 0
}

// usage lists the commands.
func usage() string {
	var b strings.Builder
	b.WriteString("usage:\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  tug %s %s\n", c.name, c.synopsis)
	}
	return b.String()
}
