//go:build e2e

package network

import (
	"context"
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
			t.Cleanup(func() { unix.Unmount(n.dir, unix.MNT_DETACH) })
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
			if tt.hostNetwork != (ns.Net == "") || tt.hostNetwork != (ns.UTS == "") || ns.IPC == "" {
				t.Errorf("namespaces = %+v, hostNetwork %v", ns, tt.hostNetwork)
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
