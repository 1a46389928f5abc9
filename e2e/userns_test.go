//go:build e2e

package e2e

import (
	"context"
	"errors"
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
	"tug/internal/userns"
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
	def, err := userns.ParseRange(userns.DefaultRange)
	if err != nil {
		t.Fatal(err)
	}
	next := def.First
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

// hostIDFiles writes a subuid, a subgid and a login.defs file for tug
// (--subuid-file, --subgid-file, --login-defs-file) under dir, and
// returns the flags; the host's own /etc files are never touched.
func hostIDFiles(t *testing.T, dir, subuid, subgid, loginDefs string) (paths [3]string, flags []string) {
	t.Helper()
	for i, f := range []struct{ name, data string }{{"subuid", subuid}, {"subgid", subgid}, {"login.defs", loginDefs}} {
		paths[i] = filepath.Join(dir, f.name)
		if err := os.WriteFile(paths[i], []byte(f.data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return paths, []string{"--subuid-file", paths[0], "--subgid-file", paths[1], "--login-defs-file", paths[2]}
}

// debianLoginDefs is the subordinate ID settings of Debian 12's
// /etc/login.defs: useradd gives each user it adds 65536 IDs from 100000.
const debianLoginDefs = "SUB_UID_MIN\t\t   100000\nSUB_UID_MAX\t\t600100000\nSUB_UID_COUNT\t\t    65536\n" +
	"SUB_GID_MIN\t\t   100000\nSUB_GID_MAX\t\t600100000\nSUB_GID_COUNT\t\t    65536\n"

// TestUserNamespaceRangeRefusesLocalUsersIDs: tug run exits 1 with a range
// that holds host IDs a local user may map (another user's entry of the
// subuid or subgid file, or login.defs' range useradd hands out), naming
// the file, the entry and the IDs shared. The range tug used by default,
// 65536/4294836224, is refused against the host's own /etc/login.defs
// (read, not changed): the first user useradd adds gets 100000-165535,
// which held the root of the second pod's block.
func TestUserNamespaceRangeRefusesLocalUsersIDs(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{noStart: true})
	users := "alice:100000:65536\nbob:165536:65536\n"
	_, withUsers := hostIDFiles(t, t.TempDir(), users, users, debianLoginDefs)
	carolPaths, carol := hostIDFiles(t, t.TempDir(), "", "carol:1879048192:65536\n", "SUB_UID_MIN 100000\nSUB_UID_MAX 600100000\n")
	movedPaths, moved := hostIDFiles(t, t.TempDir(), "", "", "SUB_UID_MIN 0x70000000\nSUB_UID_MAX 0x7fffffff\n")
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"the host's login.defs and the range from 65536", []string{"--user-namespace-range", "65536/4294836224"},
			[]string{"/etc/login.defs", "SUB_UID_MIN..SUB_UID_MAX = ", "65536/4294836224"}},
		{"another user's subuid entry", append(withUsers, "--user-namespace-range", "65536/4294836224"),
			[]string{withUsers[1] + `:1: "alice:100000:65536"`, "host IDs 100000-165535", "65536/4294836224"}},
		{"another user's subgid entry in the default range", carol,
			[]string{carolPaths[1] + `:1: "carol:1879048192:65536"`, "host IDs 1879048192-1879113727", userns.DefaultRange}},
		{"login.defs moved onto the default range", moved,
			[]string{movedPaths[2] + `:2: "SUB_UID_MIN..SUB_UID_MAX = 1879048192..2147483647"`, "host IDs 1879048192-2147352575"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg.refusedToStart(t, 60*time.Second, tt.args, tt.want...)
		})
	}
}

// TestUserNamespaceRangeFromTugsEntry: with an entry for user tug in the
// subuid and subgid files, the pods' blocks come from it; a user added
// while tug runs whose IDs cover a block never gets that block handed out
// (tug warns, naming the file and the entry); and after a kill -9 and a
// damaged allocation file, the blocks the running pods hold (read back
// from their containers) are not handed to a new pod.
func TestUserNamespaceRangeFromTugsEntry(t *testing.T) {
	t.Parallel()
	const first = 2147483648 // 2^31: tug's entry, 3 blocks
	entry := fmt.Sprintf("alice:100000:65536\ntug:%d:%d\n", first, 3*65536)
	paths, flags := hostIDFiles(t, t.TempDir(), entry, entry, debianLoginDefs)
	tg := startTug(t, tugOpts{args: flags, beforeStart: func(tg *tug) {
		tg.writeManifest("entrya.yaml", usernsPod("entrya", tg.image))
	}})
	ca := tg.waitRunning(startTimeout, "entrya", "main", 0)
	if base, err := uidMap(ca.PID); err != nil || base != first {
		t.Fatalf("pod entrya: host ID %d (%v), want tug's entry's first, %d", base, err, first)
	}
	// A user arrives whose IDs are the second block.
	mallory := fmt.Sprintf("mallory:%d:65536\n", first+65536)
	if err := os.WriteFile(paths[0], []byte(entry+mallory), 0o644); err != nil {
		t.Fatal(err)
	}
	tg.writeManifest("entryb.yaml", usernsPod("entryb", tg.image))
	cb := tg.waitRunning(startTimeout, "entryb", "main", 0)
	if base, err := uidMap(cb.PID); err != nil || base != first+2*65536 {
		t.Fatalf("pod entryb: host ID %d (%v), want the third block %d, past mallory's IDs", base, err, first+2*65536)
	}
	tg.waitFor(startTimeout, "a Warn naming mallory's entry", func() (bool, error) {
		for _, line := range strings.Split(tg.output(), "\n") {
			if strings.Contains(line, "level=WARN") && strings.Contains(line, "file="+paths[0]) && strings.Contains(line, strings.TrimSpace(mallory)) {
				return true, nil
			}
		}
		return false, errors.New("no such line")
	})

	// A power cut: the allocation file is damaged. (mallory's entry goes
	// too: a tug whose range overlaps it would refuse to start.) The next
	// tug reads the blocks back from the running containers: the new pod
	// gets the second block, the lowest no running pod holds.
	want := tg.snapshotTasks([]string{"entrya", "entryb"})
	tg.Kill()
	if err := os.WriteFile(paths[0], []byte(entry), 0o644); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(tg.rootDir, "userns.json")
	testutil.DamageFile(t, state, testutil.DamageNULFilled)
	mark := len(tg.output())
	tg.Start()
	tg.writeManifest("entryc.yaml", usernsPod("entryc", tg.image))
	cc := tg.waitRunning(startTimeout, "entryc", "main", 0)
	if base, err := uidMap(cc.PID); err != nil || base != first+65536 {
		t.Errorf("pod entryc: host ID %d (%v), want the second block %d: the first and third are held by running pods", base, err, first+65536)
	}
	if err := tg.sameTasks(want); err != nil {
		t.Fatal(err)
	}
	if !warnedFiles(tg.output()[mark:])[state] {
		t.Errorf("no Warn names the damaged %s", state)
	}
}
