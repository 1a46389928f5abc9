// Package cli holds tug's client subcommands that ask the running agent
// through its API socket (pods, describe, top, inspect, logs, exec,
// restart, node, events, rollback, history), plus completion and version,
// and lists them with those of package offline (validate, sign, verify,
// bundle). Each command parses its own flags (package cmdflag) and returns
// the process exit code: 0, 1 when it failed, 2 for a usage error.
//
// agent/ builds the Env (the defaults that come from the agent's
// configuration and the admission policy), lists Commands beside its own
// ("run" and the helper processes) and dispatches. This package must not
// import agent/ or internal/config.
package cli

import (
	"context"
	"fmt"
	"io"

	"tug/internal/cli/cmdflag"
	"tug/internal/cli/offline"
)

// Env is what the client commands take from the agent's wiring.
type Env struct {
	// Socket is the default of --socket: the agent's API socket under its
	// default run dir.
	Socket string
	// Version is what "tug version" prints.
	Version string
	// Stdin is what "tug exec -i" forwards (agent/ gives os.Stdin; -t
	// needs it to be a terminal); nil: an empty input.
	Stdin io.Reader
	// Policy builds the admission policy "tug validate --policy" applies, as
	// "tug run" would with otherwise default settings: levels maps a source
	// name to its level's flag value; allowPrivileged and
	// allowHostStateMounts are the flags of those names.
	Policy offline.PolicyFunc
}

// Command is one subcommand of tug.
type Command struct {
	Name     string
	Synopsis string // what "tug help" prints after "tug NAME"
	// Run runs it with the arguments after its name and returns the exit
	// code; "--help" prints its usage and flags on stdout and returns 0.
	Run func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// Commands returns the client subcommands in the order "tug help" lists
// them.
func Commands(env Env) []Command {
	return []Command{
		{"validate", "[--policy LEVEL] PATH...  check manifest files or directories\n" +
			"                         (and the admission policy of LEVEL: privileged, baseline, restricted)", noContext(offline.Validate(env.Policy))},
		{"pods", "[-w]          list the pods and broken manifests of the running agent, -w to follow them", env.listPods},
		{"inspect", "POD        print one pod and its status as YAML", env.inspectPod},
		{"describe", "POD       print one pod, its containers and its events, as kubectl describe does", env.describeCmd},
		{"top", "[--containers] [POD]  show the pods' CPU and memory use", env.topCmd},
		{"logs", "[-f] [-p] [--tail N] [--since D] [--timestamps] [-c CONTAINER] POD  print a container's output", env.logsCmd},
		{"node", "              show the node's pressure conditions (MemoryPressure, DiskPressure, PIDPressure)", env.showNode},
		{"events", "[-w] [POD]  list the agent's recent events, -w to follow them", env.eventsCmd},
		{"exec", "[-c CONTAINER] [-i] [-t] POD -- COMMAND [ARG...]  run a command in a running container", env.execCmd},
		{"restart", "[-c CONTAINER] POD  stop a pod's running containers and start them again", env.restartCmd},
		{"rollback", "POD       return a pod to its last good spec", env.rollbackCmd},
		{"history", "POD        list a pod's last specs and what became of them", env.historyCmd},
		{"sign", "--key KEY FILE...  write FILE.signed, the signed bundle --manifest-verify-key checks", noContext(offline.Sign)},
		{"verify", "--key PUB FILE.signed...  check a signed bundle as a device would, and show what it would apply", noContext(offline.Verify)},
		{"bundle", "push|pull ...  push a signed bundle to an OCI registry (--manifest-oci), or show what a device would apply", offline.Bundle},
		{"release", "push --key KEY --version N BIN... REF  push signed tug binaries for --self-update-oci", offline.Release},
		{"completion", "bash|zsh|fish  print the shell completion script", noContext(completionCmd)},
		{"version", "           print the version", noContext(env.versionCmd)},
	}
}

// noContext adapts a command that neither blocks nor talks to the agent.
func noContext(run func(args []string, stdout, stderr io.Writer) int) func(context.Context, []string, io.Writer, io.Writer) int {
	return func(_ context.Context, args []string, stdout, stderr io.Writer) int { return run(args, stdout, stderr) }
}

// versionCmd is "tug version".
func (e Env) versionCmd(args []string, stdout, stderr io.Writer) int {
	fs := cmdflag.New("version")
	pos, code, ok := cmdflag.Parse(fs, args, "usage: tug version\n\nPrints tug's version.\n", stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return cmdflag.UsageError(stderr, "usage: tug version\n", "tug version takes no arguments")
	}
	fmt.Fprintln(stdout, "tug", e.Version)
	return 0
}
