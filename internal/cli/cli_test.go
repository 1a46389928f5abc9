package cli

import (
	"context"
	"fmt"
	"io"
)

// testEnv is the Env of the tests. Its Policy is nil: validate, the one
// command that uses it, is tested in package offline.
var testEnv = Env{Socket: "/run/tug/tug.sock", Version: "test"}

// run runs the client command args[0] with testEnv, as tug's main does.
func run(args []string, stdout, stderr io.Writer) int {
	for _, c := range Commands(testEnv) {
		if c.Name == args[0] {
			return c.Run(context.Background(), args[1:], stdout, stderr)
		}
	}
	panic(fmt.Sprintf("no command %q", args[0]))
}
