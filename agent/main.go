// Command tug is the node agent: it runs Kubernetes-style static pods from a
// manifest directory and a URL on containerd. This package is the only place that
// builds concrete components and connects them.
//
//	tug run [flags]          run the agent
//	tug validate [--policy LEVEL] PATH...  check manifests, print file:line:col errors
//	tug pods                 list pods and broken manifests (from the agent)
//	tug inspect POD          print one pod and its status as YAML
//	tug sign --key KEY FILE  write a signed bundle for --manifest-verify-key
//	tug version              print the version
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches a subcommand and returns the process exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "run":
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		defer stop()
		err = runAgent(ctx, args[1:], stdout, stderr)
	case "validate":
		return validate(args[1:], stdout, stderr)
	case "pods":
		return listPods(context.Background(), args[1:], stdout, stderr)
	case "inspect":
		return inspectPod(context.Background(), args[1:], stdout, stderr)
	case "sign":
		return signCmd(args[1:], stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, "tug", version)
		return 0
	case "logger":
		// Run by containerd's shim for each container (binary log driver):
		// fd 3 is stdout, fd 4 stderr, fd 5 is closed when ready.
		err = runLogger(args[1:])
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "tug: unknown command %q\n%s", args[0], usage)
		return 2
	}
	if err != nil {
		if !errors.Is(err, errUsage) {
			fmt.Fprintln(stderr, "tug:", err)
		}
		return 1
	}
	return 0
}

var errUsage = errors.New("usage")

const usage = `usage:
  tug run [flags]        run the agent (tug run -h lists the flags)
  tug validate [--policy LEVEL] PATH...  check manifest files or directories
                         (and the admission policy of LEVEL: privileged, baseline, restricted)
  tug pods               list the pods and broken manifests of the running agent
  tug inspect POD        print one pod and its status as YAML
  tug sign --key KEY FILE...  write FILE.signed, the signed bundle --manifest-verify-key checks
  tug version            print the version
`
