package testutil

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// InNetns runs f on an OS thread moved into the network namespace at path.
// Sockets f creates belong to that namespace for good, whichever goroutine
// uses them later. The thread goes back to its own namespace after f; if it
// cannot, it stays locked and ends with the goroutine.
func InNetns(path string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		own, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer own.Close()
		target, err := os.Open(path)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("enter %s: %w", path, err)
			return
		}
		err = f()
		if unix.Setns(int(own.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

// NewNetns creates a network namespace named <prefix>-<random> with `ip
// netns add`, its loopback up, deletes it when the test ends, and returns
// its path (/run/netns/<name>). It needs root and ip(8).
func NewNetns(t testing.TB, prefix string) string {
	t.Helper()
	RequireRoot(t)
	RequireCommand(t, "ip")
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	name := prefix + "-" + hex.EncodeToString(b[:])
	ip := func(args ...string) error {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := ip("netns", "add", name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ip("netns", "del", name); err != nil {
			t.Error(err)
		}
	})
	if err := ip("-n", name, "link", "set", "lo", "up"); err != nil {
		t.Fatal(err)
	}
	return "/run/netns/" + name
}
