package volume

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"tug/internal/testutil"
)

// bindSelf makes dir a mount point of its own with propagation flag
// (MS_PRIVATE, MS_SHARED or MS_SLAVE), unmounted when the test ends.
func bindSelf(t *testing.T, src, dir string, flag uintptr) {
	t.Helper()
	if err := unix.Mount(src, dir, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind %s: %v", dir, err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	if err := unix.Mount("", dir, "", flag, ""); err != nil {
		t.Fatalf("propagation of %s: %v", dir, err)
	}
}

// TestUnstageKeepsPeerMounts: unstaging a hostPath on a shared host mount
// does not unmount what the host mounted below the hostPath meanwhile
// (the staging mount holds a copy of it, as a peer).
func TestUnstageKeepsPeerMounts(t *testing.T) {
	testutil.RequireRoot(t) // bind mounts
	host := t.TempDir()
	bindSelf(t, host, host, unix.MS_SHARED)
	sub := filepath.Join(host, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(host, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	stageDir := filepath.Join(t.TempDir(), "stage")
	if err := os.Mkdir(stageDir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = Unstage(stageDir) })
	if err := stage(fd, filepath.Join(stageDir, "0")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", sub, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(sub, unix.MNT_DETACH) })
	if err := os.WriteFile(filepath.Join(sub, "marker"), []byte("host"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(stageDir, "0", "sub", "marker")); err != nil {
		t.Fatalf("the host's mount did not reach the staging mount (not a peer): %v", err)
	}
	if err := Unstage(stageDir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(sub, "marker")); err != nil {
		t.Fatalf("unstaging unmounted the host's mount: %v", err)
	}
}
