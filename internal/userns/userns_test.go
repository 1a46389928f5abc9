package userns

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"tug/internal/pod"
)

func TestParseRange(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Range
		wantErr bool
	}{
		{in: DefaultRange, want: Range{First: 65536, Length: 65534 * BlockSize}},
		{in: "131072/131072", want: Range{First: 131072, Length: 131072}},
		{in: "0/65536", wantErr: true},          // the host's own IDs
		{in: "65537/65536", wantErr: true},      // not a block boundary
		{in: "65536/65535", wantErr: true},      // not whole blocks
		{in: "65536/0", wantErr: true},          // empty
		{in: "65536/4294901760", wantErr: true}, // reaches (uid_t)-1
		{in: "65536-131071", wantErr: true},
		{in: "x/65536", wantErr: true},
	} {
		got, err := ParseRange(tc.in)
		if tc.wantErr {
			if !errors.Is(err, ErrInvalidRange) {
				t.Errorf("ParseRange(%q) = %v, %v; want ErrInvalidRange", tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseRange(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
		if got.String() != tc.in {
			t.Errorf("Range.String() = %q, want %q", got.String(), tc.in)
		}
	}
}

func TestAllocator(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "userns.json")
	rng := Range{First: 65536, Length: 3 * BlockSize}
	a, err := Open(path, rng)
	if err != nil {
		t.Fatal(err)
	}
	m1, err := a.Mapping("pod-1")
	if err != nil || m1 != (pod.IDMapping{HostID: 65536, Size: BlockSize}) {
		t.Fatalf("pod-1: %v, %v", m1, err)
	}
	m2, _ := a.Mapping("pod-2")
	m3, _ := a.Mapping("pod-3")
	if m2.HostID != 131072 || m3.HostID != 196608 {
		t.Fatalf("pod-2 %d, pod-3 %d: want disjoint blocks in order", m2.HostID, m3.HostID)
	}
	if again, _ := a.Mapping("pod-1"); again != m1 {
		t.Errorf("pod-1 again: %v, want %v", again, m1)
	}
	if _, err := a.Mapping("pod-4"); !errors.Is(err, ErrExhausted) {
		t.Errorf("pod-4 in a full range: %v, want ErrExhausted", err)
	}

	// A restart: the same blocks for the same pods.
	b, err := Open(path, rng)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := b.Mapping("pod-2"); got != m2 {
		t.Errorf("pod-2 after reopening: %v, want %v", got, m2)
	}
	// A released block goes to the next pod, and the release is kept.
	if err := b.Release("pod-1"); err != nil {
		t.Fatal(err)
	}
	if err := b.Release("pod-1"); err != nil {
		t.Errorf("second release: %v", err)
	}
	c, err := Open(path, rng)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Mapping("pod-5"); got.HostID != m1.HostID {
		t.Errorf("pod-5: %v, want the freed block %d", got, m1.HostID)
	}
	if got := c.Held(); len(got) != 3 || got[0] != "pod-2" || got[1] != "pod-3" || got[2] != "pod-5" {
		t.Errorf("Held = %v", got)
	}
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*tmp*")); len(m) != 0 {
		t.Errorf("temporary files left: %v", m)
	}
}

func TestOpenKeepsBlocksOutsideTheRange(t *testing.T) {
	path := filepath.Join(t.TempDir(), "userns.json")
	a, _ := Open(path, Range{First: 65536, Length: 2 * BlockSize})
	m, _ := a.Mapping("pod-1")
	// The range shrinks past pod-1's block... to a range without it.
	b, err := Open(path, Range{First: 131072, Length: BlockSize})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := b.Mapping("pod-1"); got != m {
		t.Errorf("pod-1 keeps %v, got %v", m, got)
	}
	if got, _ := b.Mapping("pod-2"); got.HostID != 131072 {
		t.Errorf("pod-2: %v", got)
	}
}

func TestOpenRefusesBadFiles(t *testing.T) {
	for name, body := range map[string]string{
		"not json":     "{",
		"version":      `{"version":2,"pods":{}}`,
		"unaligned":    `{"version":1,"pods":{"a":65537}}`,
		"shared block": `{"version":1,"pods":{"a":65536,"b":65536}}`,
	} {
		path := filepath.Join(t.TempDir(), "userns.json")
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(path, Range{First: 65536, Length: BlockSize}); err == nil {
			t.Errorf("%s: Open accepted %s", name, body)
		}
	}
}
