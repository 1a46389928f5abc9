//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/core/leases"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/opencontainers/image-spec/identity"

	"tug/internal/testutil"
)

// usernsPod is a pod with hostUsers: false whose container reports its
// user and writes a file into an emptyDir.
func usernsPod(name, image string) string {
	return podYAML{
		name: name,
		containers: []ctrYAML{{name: "main", image: image,
			script: `echo "uid=$(id -u)"; set -- $(cat /proc/self/uid_map); echo "map=$*"; touch /data/created; touch /rootfs-write && echo rootfs=writable; ` + idle,
			mounts: []mountYAML{{name: "data", path: "/data"}}}},
		volumes: []volYAML{emptyVol("data")},
		extra:   "  hostUsers: false\n",
	}.String()
}

// uidMap reads /proc/<pid>/uid_map on the host and returns its one line's
// host ID, checking that it maps container ID 0 and 65536 IDs.
func uidMap(pid uint32) (uint32, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/uid_map", pid))
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(data))
	if len(f) != 3 || f[0] != "0" || f[2] != "65536" {
		return 0, fmt.Errorf("uid_map of %d is %q, want one line \"0 <base> 65536\"", pid, data)
	}
	base, err := strconv.ParseUint(f[1], 10, 32)
	return uint32(base), err
}

// TestUserNamespacePods: pods with hostUsers: false run as root in a user
// namespace whose root is a non-zero host ID, each pod with a block of its
// own; a file the container writes to an emptyDir belongs on the host to
// the mapped ID; across a restart of tug the containers are adopted and a
// pod created afterwards does not get a block the others hold.
func TestUserNamespacePods(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{beforeStart: func(tg *tug) {
		tg.writeManifest("usera.yaml", usernsPod("usera", tg.image))
		tg.writeManifest("userb.yaml", usernsPod("userb", tg.image))
	}})
	bases := map[string]uint32{}
	for _, name := range []string{"usera", "userb"} {
		c := tg.waitRunning(startTimeout, name, "main", 0)
		base, err := uidMap(c.PID)
		if err != nil {
			t.Fatal(err)
		}
		if base == 0 || base%65536 != 0 {
			t.Errorf("pod %s: host ID of its root %d, want a non-zero multiple of 65536", name, base)
		}
		bases[name] = base
		t.Logf("pod %s: container root is host ID %d", name, base)
		tg.waitLog(startTimeout, name, "main", 0, "uid=0", "rootfs=writable", fmt.Sprintf("map=0 %d 65536", base))
		file := filepath.Join(tg.emptyDir(name, "data"), "created")
		tg.waitFor(startTimeout, "the file the container created in its emptyDir", func() (bool, error) {
			var st syscall.Stat_t
			if err := syscall.Lstat(file, &st); err != nil {
				return false, err
			}
			if st.Uid != base || st.Gid != base {
				return false, fmt.Errorf("%s is owned by %d:%d, want %d:%d", file, st.Uid, st.Gid, base, base)
			}
			return true, nil
		})
	}
	if d := int64(bases["usera"]) - int64(bases["userb"]); d > -65536 && d < 65536 {
		t.Fatalf("the pods' blocks overlap: %v", bases)
	}

	// A restart of tug: the same containers, the same mappings.
	want := tg.snapshotTasks([]string{"usera", "userb"})
	if err := tg.Stop(); err != nil {
		t.Fatalf("tug did not stop cleanly: %v", err)
	}
	tg.Start()
	// The next pod gets the lowest free block; a copy of the image for it
	// that a dead tug left half made is removed, not tripped over.
	next := uint32(65536)
	for next == bases["usera"] || next == bases["userb"] {
		next += 65536
	}
	tg.leaveRemapLeftover(next)
	tg.writeManifest("userc.yaml", usernsPod("userc", tg.image))
	c := tg.waitRunning(startTimeout, "userc", "main", 0)
	basec, err := uidMap(c.PID)
	if err != nil {
		t.Fatal(err)
	}
	if basec != next {
		t.Errorf("pod userc got block %d, want the lowest free one, %d (held: %v)", basec, next, bases)
	}
	time.Sleep(syncFrequency + time.Second) // let tug resync the adopted pods
	if err := tg.sameTasks(want); err != nil {
		t.Fatal(err)
	}
	for _, cur := range want {
		base, err := uidMap(cur.PID)
		if err != nil {
			t.Fatal(err)
		}
		if cur.UID() == tg.uid("usera") && base != bases["usera"] || cur.UID() == tg.uid("userb") && base != bases["userb"] {
			t.Errorf("container %v: host ID %d after the restart, want its pod's %v", cur, base, bases)
		}
	}

	// A removed pod's block is freed.
	if err := os.Remove(tg.manifestPath("usera.yaml")); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(tg.rootDir, "userns.json")
	tg.waitFor(removeTimeout, "the removed pod's block to be freed in "+state, func() (bool, error) {
		data, err := os.ReadFile(state)
		if err != nil {
			return false, err
		}
		if strings.Contains(string(data), tg.uid("usera")) || !strings.Contains(string(data), tg.uid("userb")) {
			return false, fmt.Errorf("allocations: %s", data)
		}
		return true, nil
	})
}

// TestUserNamespaceRequiredForURLPods: with --url-user-namespaces=required
// a pod of the URL source without hostUsers: false is refused (Blocked,
// with the reason in its status and in tug pods), and one with it runs.
func TestUserNamespaceRequiredForURLPods(t *testing.T) {
	t.Parallel()
	image, _ := testutil.TestImage(t)
	srv := newManifestServer(t, good(shPod("urlhost", image, idle)+"---\n"+usernsPod("urlown", image)))
	tg := urlTug(t, srv.url, "--url-user-namespaces", "required")
	tg.waitBlocked("urlhost", "spec.hostUsers: must be false: pods of source "+srv.url+" run in a user namespace of their own (--url-user-namespaces=required)")
	c := tg.waitRunningUID(startTimeout, urlUID(srv.url, "urlown"), "main", 0)
	if base, err := uidMap(c.PID); err != nil || base == 0 {
		t.Errorf("pod urlown: host ID of its root %d (%v), want non-zero", base, err)
	}
}

// leaveRemapLeftover makes the working snapshot containerd's remapped
// snapshot option leaves when tug dies while copying the test image for
// host ID base: held by a lease that has not expired yet, as the lease of
// the dead tug's NewContainer holds it (24 hours).
func (tg *tug) leaveRemapLeftover(base uint32) {
	tg.t.Helper()
	ctx, cancel := context.WithTimeout(namespaces.WithNamespace(context.Background(), tg.ns), queryTimeout)
	defer cancel()
	lease, err := tg.client.LeasesService().Create(ctx, leases.WithRandomID(), leases.WithExpiration(time.Hour))
	if err != nil {
		tg.t.Fatal(err)
	}
	tg.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(namespaces.WithNamespace(context.Background(), tg.ns), queryTimeout)
		defer cancel()
		if err := tg.client.LeasesService().Delete(ctx, lease); err != nil {
			tg.t.Errorf("delete the test's lease: %v", err)
		}
	})
	ctx = leases.WithLease(ctx, lease.ID)
	img, err := tg.client.GetImage(ctx, tg.image)
	if err != nil {
		tg.t.Fatal(err)
	}
	diffIDs, err := img.RootFS(ctx)
	if err != nil {
		tg.t.Fatal(err)
	}
	parent := identity.ChainID(diffIDs).String()
	key := fmt.Sprintf("%s-%d-%d-remap", parent, base, base)
	if _, err := tg.client.SnapshotService("overlayfs").Prepare(ctx, key, parent); err != nil {
		tg.t.Fatal(err)
	}
}
