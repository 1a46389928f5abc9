//go:build e2e

package e2e

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"tug/internal/podview"

	"golang.org/x/sys/unix"
)

// TestFSGroupDeepTree: a container can build a directory chain deeper than
// tug's file descriptor limit in its claim. When another fsGroup pod mounts
// the claim, tug's ownership walk refuses the tree at a depth limit, with a
// status naming the pod and the volume; it never runs out of file
// descriptors, and the agent and the first pod go on. Once unused, the
// claim's directory is removed, however deep.
func TestFSGroupDeepTree(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	var lim unix.Rlimit
	must(t, unix.Getrlimit(unix.RLIMIT_NOFILE, &lim))
	if lim.Max > 200000 {
		t.Fatalf("RLIMIT_NOFILE hard limit %d: too high for a chain deeper than it", lim.Max)
	}
	depth := int(lim.Max) + 1000
	const (
		mount  = "    volumeMounts:\n    - {name: data, mountPath: /data}\n"
		volume = "  securityContext:\n    fsGroup: 2000\n  volumes:\n  - name: data\n    persistentVolumeClaim: {claimName: deep}\n"
	)
	tg.writeManifest("claim.yaml", "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: deep\n"+
		"spec:\n  accessModes: [ReadWriteOnce]\n  resources:\n    requests: {storage: 10Mi}\n")
	tg.writeManifest("first.yaml", objPod("first", tg.image, mount, volume))
	first := tg.waitRunning(startTimeout, "first", "main", 0)

	// What `mkdir n; mv t n/t; mv n t` in a loop does, faster.
	root := filepath.Join("/proc", strconv.Itoa(int(first.PID)), "root", "data")
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	must(t, err)
	for i := 0; i < depth; i++ {
		if err := unix.Mkdirat(fd, "d", 0o755); err != nil {
			t.Fatalf("level %d: %v", i, err)
		}
		sub, err := unix.Openat(fd, "d", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
		if err != nil {
			t.Fatalf("level %d: %v", i, err)
		}
		unix.Close(fd)
		fd = sub
	}
	unix.Close(fd)
	claimDir := filepath.Join(tg.rootDir, "claims", "default", "deep")
	t.Cleanup(func() { removeChain(t, claimDir, "d") })

	tg.writeManifest("second.yaml", objPod("second", tg.image, mount, volume))
	v := tg.waitPod(60*time.Second, "second", "refused with a status naming the volume and the depth", func(v *podview.View) error {
		if v.Status.Reason != "SyncError" || !strings.Contains(v.Status.Message, `volume "data"`) || !strings.Contains(v.Status.Message, "levels") {
			return errors.New("reason " + v.Status.Reason + ": " + v.Status.Message)
		}
		return nil
	})
	t.Logf("status of pod second: %s", v.Status.Message)
	if again := tg.waitRunning(startTimeout, "first", "main", 0); again.PID != first.PID {
		t.Errorf("the first pod was restarted: pid %d, then %d", first.PID, again.PID)
	}
	if out := tg.output(); strings.Contains(out, "too many open files") {
		t.Fatalf("tug ran out of file descriptors:\n%s", findLine(out, "too many open files"))
	}
	// The agent still opens files and serves its API.
	tg.writeManifest("third.yaml", objPod("third", tg.image, "", ""))
	tg.waitRunning(startTimeout, "third", "main", 0)

	// Once no source defines the claim and no pod uses it, its directory
	// is removed, chain and all.
	for _, f := range []string{"claim.yaml", "first.yaml", "second.yaml"} {
		must(t, os.Remove(tg.manifestPath(f)))
	}
	tg.waitFor(60*time.Second, "the claim directory removed", func() (bool, error) {
		_, err := os.Lstat(claimDir)
		return errors.Is(err, os.ErrNotExist), nil
	})
	if out := tg.output(); strings.Contains(out, "too many open files") {
		t.Fatalf("tug ran out of file descriptors:\n%s", findLine(out, "too many open files"))
	}
}

// removeChain removes a chain of directories named name below dir, from
// the bottom up, holding two descriptors at a time.
func removeChain(t *testing.T, dir, name string) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return
	}
	depth := 0
	for {
		sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
		if err != nil {
			break
		}
		unix.Close(fd)
		fd, depth = sub, depth+1
	}
	for ; depth > 0; depth-- {
		up, err := unix.Openat(fd, "..", unix.O_RDONLY|unix.O_DIRECTORY, 0)
		unix.Close(fd)
		if err != nil {
			t.Errorf("remove chain: %v", err)
			return
		}
		fd = up
		if err := unix.Unlinkat(fd, name, unix.AT_REMOVEDIR); err != nil {
			t.Errorf("remove chain: %v", err)
			break
		}
	}
	unix.Close(fd)
}
