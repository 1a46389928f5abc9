package source

import (
	"errors"
	"io/fs"
	"path/filepath"
	"testing"
	"time"

	"tug/internal/testutil"
)

// TestCheckpointDamaged: a checkpoint a power cut damaged reads as absent
// (missing) or untrusted (ErrCorruptCheckpoint, which the sources log as a
// Warn naming the file and treat as absent), never as a bundle.
func TestCheckpointDamaged(t *testing.T) {
	for _, d := range testutil.Damages {
		t.Run(string(d), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "checkpoints", "a.json")
			in := checkpoint{URL: "http://x/p", FetchedAt: time.Unix(100, 0).UTC(), Body: []byte("kind: Pod\n"), BundleVersion: 7}
			if err := writeCheckpoint(path, in); err != nil {
				t.Fatal(err)
			}
			testutil.DamageFile(t, path, d)
			_, err := readCheckpoint(path)
			switch {
			case d == testutil.DamageMissing && !errors.Is(err, fs.ErrNotExist):
				t.Errorf("missing: %v", err)
			case d != testutil.DamageMissing && !errors.Is(err, ErrCorruptCheckpoint):
				t.Errorf("%s: %v, want ErrCorruptCheckpoint", d, err)
			}
			// The next accepted fetch rewrites it.
			if err := writeCheckpoint(path, in); err != nil {
				t.Fatal(err)
			}
			if _, err := readCheckpoint(path); err != nil {
				t.Errorf("rewritten: %v", err)
			}
		})
	}
}
