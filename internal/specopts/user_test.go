package specopts

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestResolveUser: every form of an image's USER, against imageRoot's
// /etc/passwd (app 1000:1001) and /etc/group (app 1001, extra 2000 with app).
func TestResolveUser(t *testing.T) {
	root := os.DirFS(imageRoot(t))
	tests := []struct {
		user     string
		uid, gid uint32
		groups   []uint32
		err      string
	}{
		{user: "app", uid: 1000, gid: 1001, groups: []uint32{1001, 2000}},
		{user: "1000", uid: 1000, gid: 1001, groups: []uint32{1001, 2000}},
		{user: "4242", uid: 4242, gid: 0, groups: []uint32{0}},
		{user: "app:extra", uid: 1000, gid: 2000, groups: []uint32{2000}},
		{user: "app:7", uid: 1000, gid: 7, groups: []uint32{7, 2000}},
		{user: "5:extra", uid: 5, gid: 2000, groups: []uint32{2000}},
		{user: "5:6", uid: 5, gid: 6, groups: []uint32{6}},
		{user: "root", uid: 0, gid: 0, groups: []uint32{0}},
		{user: "nobody", err: `no user "nobody"`},
		{user: "app:nogroup", err: `no group "nogroup"`},
		{user: "2147483648", err: "out of range"},
		{user: "1:99999999999", err: "out of range"},
		{user: "a:b:c", err: "invalid USER value"},
	}
	for _, tt := range tests {
		t.Run(tt.user, func(t *testing.T) {
			uid, gid, err := resolveUser(root, tt.user)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || uid != tt.uid || gid != tt.gid {
				t.Fatalf("= %d:%d, %v; want %d:%d", uid, gid, err, tt.uid, tt.gid)
			}
			member, _, _ := strings.Cut(tt.user, ":")
			groups, err := supplementaryGroups(root, member)
			if err != nil {
				t.Fatal(err)
			}
			if got := withPrimary(gid, groups); !slices.Equal(got, tt.groups) {
				t.Errorf("groups = %v, want %v", got, tt.groups)
			}
		})
	}
}

// TestResolveUserWithoutFiles: an image without /etc/passwd runs a uid with
// gid 0 and refuses a name.
func TestResolveUserWithoutFiles(t *testing.T) {
	root := os.DirFS(t.TempDir())
	if uid, gid, err := resolveUser(root, "1000"); err != nil || uid != 1000 || gid != 0 {
		t.Errorf("1000 = %d:%d, %v; want 1000:0", uid, gid, err)
	}
	if _, _, err := resolveUser(root, "app"); err == nil {
		t.Error("a name without /etc/passwd resolved")
	}
	if g, err := supplementaryGroups(root, "root"); err != nil || len(g) != 0 {
		t.Errorf("groups without /etc/group = %v, %v", g, err)
	}
}
