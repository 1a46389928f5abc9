package cli

import (
	"context"
	"fmt"
	"io"

	"tug/internal/policy"
)

// testEnv is the Env of the tests. Its policy protects no host path:
// agent/ passes the agent's own (agent's TestValidateWiring checks them).
var testEnv = Env{Socket: "/run/tug/tug.sock", Version: "test", Policy: testPolicy}

func testPolicy(levels map[string]string, allowPrivileged, allowHostStateMounts bool) *policy.Policy {
	pl := &policy.Policy{Levels: map[string]policy.Level{}, Default: policy.Restricted,
		AllowPrivileged: allowPrivileged, AllowHostStateMounts: allowHostStateMounts}
	for src, level := range levels {
		pl.Levels[src] = policy.Level(level)
	}
	return pl
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
