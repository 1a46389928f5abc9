package cli

import (
	"context"
	"fmt"
	"io"

	"tug/internal/policy"
)

// testEnv is the Env of the tests: a policy with containerd's socket as
// its one protected path, where agent/ protects the agent's whole list
// (agent's TestValidateWiring checks that one).
var testEnv = Env{Socket: "/run/tug/tug.sock", Version: "test", Policy: testPolicy}

func testPolicy(levels map[string]string, allowPrivileged, allowHostStateMounts bool) *policy.Policy {
	l := make(map[string]policy.Level, len(levels))
	for src, level := range levels {
		l[src] = policy.Level(level)
	}
	return &policy.Policy{
		Levels:               l,
		Default:              policy.Restricted,
		AllowPrivileged:      allowPrivileged,
		AllowHostStateMounts: allowHostStateMounts,
		Protected:            []policy.Protected{{Path: "/run/containerd/containerd.sock", What: "containerd's socket"}},
	}
}

// run runs the client command args[0] with testEnv, as tug's main does.
func run(args []string, stdout, stderr io.Writer) int {
	for _, c := range Commands(testEnv) {
		if c.Name == args[0] {
			return c.Run(context.Background(), args[1:], stdout, stderr)
		}
	}
	panic(fmt.Sprintf("no command %q", args[0]))
}
