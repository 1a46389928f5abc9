package volume

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// chain makes depth nested directories "d" below dir, each holding a file
// "f", without ever holding more than two descriptors.
func chain(t *testing.T, dir string, depth int) {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < depth; i++ {
		if err := unix.Mkdirat(fd, "d", 0o755); err != nil {
			t.Fatal(err)
		}
		sub, err := openDirAt(fd, "d")
		if err != nil {
			t.Fatal(err)
		}
		unix.Close(fd)
		fd = sub
		f, err := unix.Openat(fd, "f", unix.O_CREAT|unix.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		unix.Close(f)
	}
	unix.Close(fd)
}

// openFds counts the process's open descriptors.
func openFds(t *testing.T) int {
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

// TestTreeWalkBounded: a walk visits every level of a deep chain (deeper
// than maxOpenDirs, so directories are opened again on the way up) with a
// bounded number of descriptors, refuses a chain deeper than maxWalkDepth,
// and removeTree removes any of them.
func TestTreeWalkBounded(t *testing.T) {
	tests := []struct {
		name    string
		depth   int
		wantErr error
	}{
		{name: "shallow", depth: 3},
		{name: "deeper than the open window", depth: 5 * maxOpenDirs},
		{name: "at the limit", depth: maxWalkDepth},
		{name: "beyond the limit", depth: maxWalkDepth + 1, wantErr: ErrTreeTooDeep},
		{name: "far beyond the limit", depth: 3 * maxWalkDepth, wantErr: ErrTreeTooDeep},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "vol")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			chain(t, dir, tt.depth)
			root, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(root)
			base := openFds(t)
			maxFds, dirs, leaves, files := 0, 0, 0, 0
			w := &treeWalk{
				path: dir,
				enter: func(int, string) error {
					dirs++
					maxFds = max(maxFds, openFds(t)-base)
					return nil
				},
				entry: func(int, string, string, *unix.Stat_t) error { files++; return nil },
				leave: func(int, string, string) error { leaves++; return nil },
			}
			err = w.run(root)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("walk: %v, want %v", err, tt.wantErr)
			}
			if maxFds > maxOpenDirs+2 {
				t.Errorf("the walk held %d descriptors, want at most %d", maxFds, maxOpenDirs+2)
			}
			if n := openFds(t); n != base {
				t.Errorf("%d descriptors open after the walk, %d before", n, base)
			}
			if tt.wantErr == nil && (dirs != tt.depth+1 || leaves != tt.depth || files != tt.depth) {
				t.Errorf("visited %d directories, left %d, %d files; want %d, %d, %d", dirs, leaves, files, tt.depth+1, tt.depth, tt.depth)
			}
			// removeTree has no depth limit: it moves deep subtrees up.
			if err := removeTree(dir); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("removed tree: %v", err)
			}
		})
	}
}

// TestRemoveTreeKeepsLinkTargets: removeTree removes a symlink, never what
// it points to.
func TestRemoveTreeKeepsLinkTargets(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "claim")
	outside := t.TempDir()
	for _, err := range []error{
		os.MkdirAll(filepath.Join(dir, "sub"), 0o755),
		os.WriteFile(filepath.Join(outside, "keep"), nil, 0o600),
		os.Symlink(outside, filepath.Join(dir, "sub", "link")),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := removeTree(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(outside, "keep")); err != nil {
		t.Fatalf("the link's target: %v", err)
	}
	if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("removed tree: %v", err)
	}
}
