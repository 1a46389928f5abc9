package volume

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"tug/internal/testutil"
)

// TestSetVolumeOwnership: the files and directories of a volume get the
// group and its bits, a symlink pointing out of the volume leaves its
// target alone, and OnRootMismatch leaves a tree whose root matches as it
// is.
func TestSetVolumeOwnership(t *testing.T) {
	if os.Geteuid() != 0 {
		testutil.Missing(t, "root (to chown)")
	}
	const gid = 2000
	tests := []struct {
		name        string
		readOnly    bool
		always      bool
		rootMatches bool
		wantFile    os.FileMode // the mode file a gets
		wantGroup   int         // the group file a gets
	}{
		{name: "always", always: true, wantFile: 0o660, wantGroup: gid},
		{name: "read-only", always: true, readOnly: true, wantFile: 0o640, wantGroup: gid},
		{name: "root mismatch", wantFile: 0o660, wantGroup: gid},
		{name: "root matches", rootMatches: true, wantFile: 0o600, wantGroup: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "vol")
			outside := filepath.Join(t.TempDir(), "secret")
			for _, err := range []error{
				os.MkdirAll(filepath.Join(dir, "sub"), 0o755),
				os.WriteFile(filepath.Join(dir, "a"), nil, 0o600),
				os.WriteFile(filepath.Join(dir, "sub", "b"), nil, 0o600),
				os.WriteFile(outside, nil, 0o600),
				os.Symlink(outside, filepath.Join(dir, "link")),
				os.Chmod(dir, 0o755),
			} {
				if err != nil {
					t.Fatal(err)
				}
			}
			if tt.rootMatches {
				if err := os.Chown(dir, -1, gid); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(dir, 0o775|os.ModeSetgid); err != nil {
					t.Fatal(err)
				}
			}
			if err := setVolumeOwnership(dir, gid, tt.readOnly, tt.always); err != nil {
				t.Fatal(err)
			}
			check := func(path string, wantGid int, wantMode os.FileMode) {
				t.Helper()
				fi, err := os.Lstat(path)
				if err != nil {
					t.Fatal(err)
				}
				st := fi.Sys().(*syscall.Stat_t)
				if int(st.Gid) != wantGid || fi.Mode()&(os.ModePerm|os.ModeSetgid) != wantMode {
					t.Errorf("%s: gid %d mode %v, want gid %d mode %v", path, st.Gid, fi.Mode(), wantGid, wantMode)
				}
			}
			check(filepath.Join(dir, "a"), tt.wantGroup, tt.wantFile)
			check(outside, 0, 0o600)
			if tt.wantGroup == gid {
				check(filepath.Join(dir, "sub"), gid, 0o755|0o070&(tt.wantFile|0o010)|os.ModeSetgid)
				check(filepath.Join(dir, "sub", "b"), gid, tt.wantFile)
				if fi, err := os.Lstat(filepath.Join(dir, "link")); err != nil || int(fi.Sys().(*syscall.Stat_t).Gid) != gid {
					t.Errorf("the symlink itself did not get group %d: %v", gid, err)
				}
			}
		})
	}
}
