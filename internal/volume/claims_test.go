package volume

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"tug/internal/pod"
)

// TestRemoveClaims: a claim belongs to its source. The file source's
// claims stay at claims/<namespace>/<name>; another source's defining the
// same namespace and name has a directory of its own; a directory is kept
// while its source defines (or its pods mount) the claim, and a directory
// at the file source's path is kept while any source defines that
// namespace and name (an earlier tug kept every source's claims there).
func TestRemoveClaims(t *testing.T) {
	const file, url = "file:/etc/tug/manifests", "https://fleet.example/pods"
	key := func(src, name string) pod.ClaimKey {
		return pod.ClaimKey{Source: src, Namespace: "default", Name: name}
	}
	tests := []struct {
		name        string
		dirs        []pod.ClaimKey // directories there before
		retained    []pod.ClaimKey // marked retained (a StatefulSet's)
		marks       []pod.ClaimKey // marks whose directory is gone
		keep        []pod.ClaimKey
		wantRemoved []pod.ClaimKey
	}{
		{
			name: "same name in two sources",
			dirs: []pod.ClaimKey{key(file, "data"), key(url, "data")},
			keep: []pod.ClaimKey{key(file, "data"), key(url, "data")},
		},
		{
			name:        "the URL source drops its claim",
			dirs:        []pod.ClaimKey{key(file, "data"), key(url, "data")},
			keep:        []pod.ClaimKey{key(file, "data")},
			wantRemoved: []pod.ClaimKey{key(url, "data")},
		},
		{
			name:        "the file source drops its claim",
			dirs:        []pod.ClaimKey{key(file, "data"), key(url, "data"), key(url, "other")},
			keep:        []pod.ClaimKey{key(url, "other")},
			wantRemoved: []pod.ClaimKey{key(file, "data"), key(url, "data")},
		},
		{
			name: "an earlier tug's directory of a URL claim",
			dirs: []pod.ClaimKey{key(file, "data")},
			keep: []pod.ClaimKey{key(url, "data")},
		},
		{
			name:     "a StatefulSet's retained claims outlive their definition",
			dirs:     []pod.ClaimKey{key(file, "data-db-0"), key(url, "data-db-0")},
			retained: []pod.ClaimKey{key(file, "data-db-0"), key(url, "data-db-0")},
		},
		{
			name:        "a claim retained, another not",
			dirs:        []pod.ClaimKey{key(file, "data-db-0"), key(file, "data")},
			retained:    []pod.ClaimKey{key(file, "data-db-0")},
			wantRemoved: []pod.ClaimKey{key(file, "data")},
		},
		{
			name:  "the mark of a claim removed by hand",
			marks: []pod.ClaimKey{key(file, "data-db-0"), key(url, "data-db-0")},
		},
		{
			name:        "a source no longer configured",
			dirs:        []pod.ClaimKey{key("https://old.example/", "data")},
			wantRemoved: []pod.ClaimKey{key("https://old.example/", "data")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New(Config{RootDir: t.TempDir(), FileSource: file})
			for _, k := range tt.dirs {
				if err := os.MkdirAll(m.claimDir(k), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for _, k := range append(slices.Clone(tt.retained), tt.marks...) {
				if err := os.MkdirAll(m.claimDir(k), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := markRetained(m.claimDir(k), true); err != nil {
					t.Fatal(err)
				}
			}
			for _, k := range tt.marks {
				if err := os.Remove(m.claimDir(k)); err != nil {
					t.Fatal(err)
				}
			}
			keep := map[pod.ClaimKey]bool{}
			for _, k := range tt.keep {
				keep[k] = true
			}
			removed, err := m.RemoveClaims(keep)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, k := range tt.wantRemoved {
				want = append(want, m.claimDir(k))
			}
			slices.Sort(removed)
			slices.Sort(want)
			if !slices.Equal(removed, want) {
				t.Errorf("removed %q, want %q", removed, want)
			}
			for _, k := range tt.dirs {
				_, err := os.Stat(m.claimDir(k))
				if gone := os.IsNotExist(err); gone != slices.Contains(tt.wantRemoved, k) {
					t.Errorf("%s: removed %v", m.claimDir(k), gone)
				}
			}
			for _, k := range tt.retained {
				if _, err := os.Stat(retainedMark(m.claimDir(k))); err != nil {
					t.Errorf("the mark of a retained claim: %v", err)
				}
			}
			for _, k := range tt.marks {
				if _, err := os.Stat(retainedMark(m.claimDir(k))); !os.IsNotExist(err) {
					t.Errorf("the mark of a claim removed by hand is still there: %v", err)
				}
			}
		})
	}
	m := New(Config{RootDir: "/var/lib/tug", FileSource: file})
	if got := m.claimDir(key(file, "data")); got != "/var/lib/tug/claims/default/data" {
		t.Errorf("the file source's claim: %s", got)
	}
	if got := m.claimDir(key(url, "data")); filepath.Dir(filepath.Dir(filepath.Dir(got))) != "/var/lib/tug/source-claims" {
		t.Errorf("the URL source's claim: %s", got)
	}
}

// TestMarkRetained: a claim's mark follows the retention of its
// definition (a StatefulSet's whenDeleted changed to Delete unmarks it),
// and marking twice is a no-op.
func TestMarkRetained(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "default", "data-db-0")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		retain bool
		want   bool
	}{{true, true}, {true, true}, {false, false}, {false, false}, {true, true}}
	for i, tt := range tests {
		if err := markRetained(dir, tt.retain); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		_, err := os.Stat(retainedMark(dir))
		if got := err == nil; got != tt.want {
			t.Fatalf("step %d: marked %v, want %v (%v)", i, got, tt.want, err)
		}
	}
	if got := filepath.Base(retainedMark(dir)); got != ".retained.data-db-0" {
		t.Errorf("mark %s", got)
	}
}
