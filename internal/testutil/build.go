package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// EnvBinary names a prebuilt tug binary (the ./agent package) for the tests
// to use instead of building one; see RunWithBinary.
const EnvBinary = "TUG_TEST_BINARY"

// RunWithBinary is a TestMain body for test packages that need a program of
// the repository built: it builds pkg (a package path relative to the test
// package's directory, e.g. "../../agent") with CGO_ENABLED=0 into a
// temporary directory, stores the binary's path in *bin, runs the tests and
// removes the binary. It returns the exit code for os.Exit.
//
// When pkg is tug's main package (its last element is "agent") and
// TUG_TEST_BINARY is set, nothing is built: *bin is that binary, which must
// exist. Test binaries copied to a machine without the Go toolchain, or to a
// slow one (the cgroup v2 guest of `make test-v2`), use this.
func RunWithBinary(m *testing.M, pkg string, bin *string) int {
	if prebuilt, ok, err := prebuiltBinary(pkg); ok {
		if err != nil {
			fmt.Fprintln(os.Stderr, "testutil:", err)
			return 1
		}
		*bin = prebuilt
		return m.Run()
	}
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
	// The flags of the Makefile's builds (BUILDFLAGS): the tests run the
	// binary that ships.
	cmd := exec.Command(gobin, "build", "-trimpath", "-tags", "grpcnotrace", "-o", *bin, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "testutil: go build %s: %v\n%s", pkg, err, out)
		return 1
	}
	return m.Run()
}

// prebuiltBinary reports whether RunWithBinary should use the binary named
// by TUG_TEST_BINARY for pkg instead of building it (ok), and returns its
// absolute path, or an error when it is not an executable file.
func prebuiltBinary(pkg string) (path string, ok bool, err error) {
	path = os.Getenv(EnvBinary)
	if path == "" || filepath.Base(filepath.Clean(pkg)) != "agent" {
		return "", false, nil
	}
	if path, err = filepath.Abs(path); err != nil {
		return "", true, fmt.Errorf("%s: %w", EnvBinary, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return "", true, fmt.Errorf("%s: %w", EnvBinary, err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return "", true, fmt.Errorf("%s=%s is not an executable file", EnvBinary, path)
	}
	return path, true, nil
}
