package source

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestCheckpointRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "checkpoints")
	path := filepath.Join(dir, "a.json")
	if _, err := readCheckpoint(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
	in := checkpoint{URL: "http://x/p", FetchedAt: time.Unix(100, 0).UTC(), ETag: `"e"`, LastModified: "Mon", Body: []byte("a\x00b"), BundleVersion: 7}
	if err := writeCheckpoint(path, in); err != nil {
		t.Fatal(err)
	}
	out, err := readCheckpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	if out.URL != in.URL || !out.FetchedAt.Equal(in.FetchedAt) || out.ETag != in.ETag || out.LastModified != in.LastModified ||
		!bytes.Equal(out.Body, in.Body) || out.BundleVersion != in.BundleVersion || out.Version != 1 || out.SHA256 != sha256Hex(in.Body) {
		t.Fatalf("round trip: %+v", out)
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Errorf("dir mode %v", fi.Mode())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("temp files left: %v", ents)
	}
	for name, data := range map[string]string{
		"not json": "{",
		"version":  `{"version":2,"body":"","sha256":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}`,
		"checksum": `{"version":1,"body":"YQ==","sha256":"00"}`,
		"bad b64":  `{"version":1,"body":"@@","sha256":""}`,
		"empty":    ``,
	} {
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := readCheckpoint(path); !errors.Is(err, ErrCorruptCheckpoint) {
			t.Errorf("%s: %v, want ErrCorruptCheckpoint", name, err)
		}
	}
}

func FuzzReadCheckpoint(f *testing.F) {
	var valid bytes.Buffer
	path := filepath.Join(f.TempDir(), "seed.json")
	if err := writeCheckpoint(path, checkpoint{URL: "http://x/", Body: []byte(podManifest("a", "b")), ETag: `"1"`}); err != nil {
		f.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	valid.Write(data)
	f.Add(valid.Bytes())
	f.Add([]byte(`{"version":1,"body":null,"sha256":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}`))
	f.Add([]byte("{"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		cp, err := decodeCheckpoint("fuzz", data)
		if err != nil {
			if !errors.Is(err, ErrCorruptCheckpoint) {
				t.Fatalf("error %v does not wrap ErrCorruptCheckpoint", err)
			}
			return
		}
		// A valid one round-trips through a file.
		p := filepath.Join(t.TempDir(), "c.json")
		if err := writeCheckpoint(p, cp); err != nil {
			t.Fatal(err)
		}
		back, err := readCheckpoint(p)
		if err != nil || !bytes.Equal(back.Body, cp.Body) || back.URL != cp.URL || back.SHA256 != cp.SHA256 || back.ETag != cp.ETag {
			t.Fatalf("round trip: %+v, %v", back, err)
		}
	})
}
