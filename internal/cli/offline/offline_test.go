package offline

import (
	"context"
	"flag"
	"fmt"
	"io"

	"tug/internal/policy"
)

// update rewrites the .want files of testdata/bad from what validate prints.
var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// testPolicy is the PolicyFunc of the tests. It protects no host path:
// agent/ passes the agent's own (agent's TestValidateWiring checks them).
func testPolicy(levels map[string]string, allowPrivileged, allowHostStateMounts bool) *policy.Policy {
	pl := &policy.Policy{Levels: map[string]policy.Level{}, Default: policy.Restricted,
		AllowPrivileged: allowPrivileged, AllowHostStateMounts: allowHostStateMounts}
	for src, level := range levels {
		pl.Levels[src] = policy.Level(level)
	}
	return pl
}

// testValidate is "tug validate" with testPolicy.
func testValidate(args []string, stdout, stderr io.Writer) int {
	return validate(testPolicy, args, stdout, stderr)
}

// run runs the subcommand args[0] of this package, as tug's main does.
func run(args []string, stdout, stderr io.Writer) int {
	switch args[0] {
	case "validate":
		return testValidate(args[1:], stdout, stderr)
	case "sign":
		return Sign(args[1:], stdout, stderr)
	case "verify":
		return Verify(args[1:], stdout, stderr)
	case "bundle":
		return Bundle(context.Background(), args[1:], stdout, stderr)
	}
	panic(fmt.Sprintf("no command %q", args[0]))
}
