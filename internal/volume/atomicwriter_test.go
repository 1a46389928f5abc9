package volume

import (
	"os"
	"path/filepath"
	"testing"

	"tug/internal/objects"
)

// TestWriteAtomic: the files appear through ..data, an update swaps the
// link (removed names disappear, the old version's directory is gone), and
// the same content again writes nothing.
func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	steps := []struct {
		name    string
		files   map[string]objects.VolumeFile
		changed bool
		gone    []string
	}{
		{"first", map[string]objects.VolumeFile{"a": {Data: []byte("1"), Mode: 0o644}, "sub/b": {Data: []byte("2"), Mode: 0o600}}, true, nil},
		{"same", map[string]objects.VolumeFile{"a": {Data: []byte("1"), Mode: 0o644}, "sub/b": {Data: []byte("2"), Mode: 0o600}}, false, nil},
		{"mode", map[string]objects.VolumeFile{"a": {Data: []byte("1"), Mode: 0o640}, "sub/b": {Data: []byte("2"), Mode: 0o600}}, true, nil},
		{"update", map[string]objects.VolumeFile{"a": {Data: []byte("new"), Mode: 0o644}, "c": {Data: nil, Mode: 0o644}}, true, []string{"sub"}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			changed, err := writeAtomic(dir, st.files)
			if err != nil || changed != st.changed {
				t.Fatalf("writeAtomic = %v, %v; want changed %v", changed, err, st.changed)
			}
			for rel, f := range st.files {
				p := filepath.Join(dir, rel)
				data, err := os.ReadFile(p)
				if err != nil || string(data) != string(f.Data) {
					t.Errorf("%s = %q, %v; want %q", rel, data, err, f.Data)
				}
				if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != f.Mode {
					t.Errorf("%s mode %v, %v; want %v", rel, fi.Mode(), err, f.Mode)
				}
			}
			for _, g := range st.gone {
				if _, err := os.Lstat(filepath.Join(dir, g)); !os.IsNotExist(err) {
					t.Errorf("%s still there: %v", g, err)
				}
			}
			entries, _ := os.ReadDir(dir)
			versions := 0
			for _, e := range entries {
				if e.IsDir() && e.Name() != dataLink && len(e.Name()) > 2 && e.Name()[:2] == ".." {
					versions++
				}
			}
			if versions != 1 {
				t.Errorf("%d version directories, want 1", versions)
			}
		})
	}
}
