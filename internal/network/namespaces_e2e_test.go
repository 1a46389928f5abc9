//go:build e2e

package network

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"tug/internal/pod"
	"tug/internal/testutil"
)

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatalf("stat %s: %v", path, err)
	}
	return st.Ino
}

func TestNamespacesPinAndRemove(t *testing.T) {
	testutil.RequireRoot(t)
	ctx := context.Background()
	tests := []struct {
		name        string
		hostNetwork bool
		wantPinned  []string
	}{
		{"own network", false, []string{"net", "ipc", "uts"}},
		{"host network", true, []string{"ipc"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := NewNamespaces(t.TempDir(), testutil.Logger(t))
			if err := n.Init(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { unpinDirs(n) })
			p := &pod.Pod{Metadata: pod.ObjectMeta{Name: "web-node1", Namespace: "default", UID: "uid-1"}}
			p.Spec.HostNetwork = tt.hostNetwork
			ns, err := n.EnsureNamespaces(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range tt.wantPinned {
				path := filepath.Join(n.dir, "uid-1", k)
				if !pinned(path) {
					t.Errorf("%s is not a pinned namespace", path)
				}
				if inode(t, path) == inode(t, "/proc/self/ns/"+k) {
					t.Errorf("%s is the host's namespace", k)
				}
			}
			// A hostNetwork pod joins the network tug runs in: the host's
			// (Net "") or, when that is not init's, as here under
			// TestMain, the one pinned at node-net.
			wantNet := ns.Net != ""
			if tt.hostNetwork {
				wantNet = ns.Net == n.nodeNet && (ns.Net == "" || inode(t, ns.Net) == inode(t, "/proc/self/ns/net"))
			}
			if !wantNet || tt.hostNetwork != (ns.UTS == "") || ns.IPC == "" {
				t.Errorf("namespaces = %+v, hostNetwork %v, node network %q", ns, tt.hostNetwork, n.nodeNet)
			}
			// Idempotent: the same namespaces come back.
			before := inode(t, ns.IPC)
			ns2, err := n.EnsureNamespaces(ctx, p)
			if err != nil || ns2 != ns || inode(t, ns.IPC) != before {
				t.Errorf("second EnsureNamespaces = %+v, %v; want the same pins", ns2, err)
			}
			if uids, _ := n.List(); len(uids) != 1 || uids[0] != "uid-1" {
				t.Errorf("List = %v", uids)
			}
			if err := n.RemoveNamespaces(ctx, "uid-1"); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(n.dir, "uid-1")); !os.IsNotExist(err) {
				t.Errorf("namespace dir still there: %v", err)
			}
			if err := n.RemoveNamespaces(ctx, "uid-1"); err != nil {
				t.Errorf("second remove: %v", err)
			}
		})
	}
}

// TestPinLeavesNoThreadInPodNamespaces pins many pods and then checks every
// thread of the process: none may stay in a pod's namespaces (which would
// keep them alive after removal, and, for the main thread, make the host's
// /proc/self/ns point at a pod).
func TestPinLeavesNoThreadInPodNamespaces(t *testing.T) {
	testutil.RequireRoot(t)
	ctx := context.Background()
	host := map[string]uint64{}
	for _, k := range []string{"net", "ipc", "uts"} {
		host[k] = inode(t, "/proc/self/ns/"+k)
	}
	n := NewNamespaces(t.TempDir(), testutil.Logger(t))
	if err := n.Init(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unpinDirs(n) })
	for i := range 30 {
		p := &pod.Pod{Metadata: pod.ObjectMeta{Name: "p", Namespace: "default", UID: fmt.Sprintf("uid-%d", i)}}
		if _, err := n.EnsureNamespaces(ctx, p); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.RemoveNamespaces(ctx, p.Metadata.UID) })
	}
	tasks, err := filepath.Glob("/proc/self/task/*/ns")
	if err != nil || len(tasks) == 0 {
		t.Fatalf("list threads: %v", err)
	}
	for _, dir := range tasks {
		for k, want := range host {
			var st unix.Stat_t
			if err := unix.Stat(filepath.Join(dir, k), &st); err != nil {
				continue // the thread ended meanwhile
			}
			if st.Ino != want {
				t.Errorf("thread %s is in a pod's %s namespace", dir, k)
			}
		}
	}
}

// unpinDirs undoes Namespaces.Init: the shared mount of the namespace dir
// and the pin of the node's network namespace, if any.
func unpinDirs(n *Namespaces) {
	unix.Unmount(n.dir, unix.MNT_DETACH)
	if n.nodeNet != "" {
		unix.Unmount(n.nodeNet, unix.MNT_DETACH)
	}
}
