package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// RunWithBinary is a TestMain body for test packages that need a program of
// the repository built: it builds pkg (a package path relative to the test
// package's directory, e.g. "../../agent") with CGO_ENABLED=0 into a
// temporary directory, stores the binary's path in *bin, runs the tests and
// removes the binary. It returns the exit code for os.Exit.
func RunWithBinary(m *testing.M, pkg string, bin *string) int {
	dir, err := os.MkdirTemp("", "tug-test-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "testutil:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	*bin = filepath.Join(dir, "tug")
	gobin := filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		gobin = "go"
	}
	cmd := exec.Command(gobin, "build", "-o", *bin, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "testutil: go build %s: %v\n%s", pkg, err, out)
		return 1
	}
	return m.Run()
}
