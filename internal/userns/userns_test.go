package userns

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"tug/internal/pod"
	"tug/internal/testutil"
)

func TestParseRange(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Range
		wantErr bool
	}{
		{in: DefaultRange, want: Range{First: 0x70000000, Length: 4094 * BlockSize}},
		{in: "65536/4294836224", want: Range{First: 65536, Length: 65534 * BlockSize}},
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
	a, err := Open(path, rng, nil, testutil.Logger(t))
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
	b, err := Open(path, rng, nil, testutil.Logger(t))
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
	c, err := Open(path, rng, nil, testutil.Logger(t))
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
	a, _ := Open(path, Range{First: 65536, Length: 2 * BlockSize}, nil, testutil.Logger(t))
	m, _ := a.Mapping("pod-1")
	// The range shrinks past pod-1's block... to a range without it.
	b, err := Open(path, Range{First: 131072, Length: BlockSize}, nil, testutil.Logger(t))
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

// TestOpenDamagedFile: an allocation file a power cut damaged never
// stops tug, and never hands a running pod's block to another pod: Open
// warns (naming the file) and Restore gives the running pods their blocks
// back from their containers before a new pod is given one.
func TestOpenDamagedFile(t *testing.T) {
	rng := Range{First: 65536, Length: 4 * BlockSize}
	type tc struct {
		name   string
		damage func(t *testing.T, path string)
		warn   bool
	}
	var cases []tc
	for _, d := range testutil.Damages {
		cases = append(cases, tc{name: string(d), damage: func(t *testing.T, path string) { testutil.DamageFile(t, path, d) }, warn: d != testutil.DamageMissing})
	}
	for name, body := range map[string]string{
		"version":      `{"version":2,"pods":{}}`,
		"unaligned":    `{"version":1,"pods":{"a":65537}}`,
		"shared block": `{"version":1,"pods":{"a":65536,"b":65536}}`,
	} {
		cases = append(cases, tc{name: name, damage: func(t *testing.T, path string) { os.WriteFile(path, []byte(body), 0o600) }, warn: true})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "userns.json")
			a, err := Open(path, rng, nil, testutil.Logger(t))
			if err != nil {
				t.Fatal(err)
			}
			m1, _ := a.Mapping("pod-1")
			m2, _ := a.Mapping("pod-2") // the second block: a lost file would hand it out first after pod-1's
			c.damage(t, path)
			log := testutil.NewWarnLog(t)
			b, err := Open(path, rng, nil, log.Logger)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if got := log.Files(); c.warn != slices.Contains(got, path) {
				t.Errorf("warnings name %q, want %s named: %v", got, path, c.warn)
			}
			// pod-2 runs; pod-1 was removed while tug was down.
			if err := b.Restore(map[string]pod.IDMapping{"pod-2": m2}); err != nil {
				t.Fatal(err)
			}
			if got, _ := b.Mapping("pod-2"); got != m2 {
				t.Errorf("pod-2 got %v after Restore, holds %v", got, m2)
			}
			if got, _ := b.Mapping("pod-3"); got.HostID == m2.HostID {
				t.Errorf("pod-3 was given running pod-2's block %v", got)
			}
			_ = m1
			log2 := testutil.NewWarnLog(t)
			c2, err := Open(path, rng, nil, log2.Logger)
			if err != nil || len(log2.Files()) != 0 {
				t.Fatalf("the rewritten file: %v, warnings %q", err, log2.Files())
			}
			if got := c2.Held(); !slices.Contains(got, "pod-2") || !slices.Contains(got, "pod-3") {
				t.Errorf("rewritten file holds %v", got)
			}
		})
	}
}

// TestRestoreRunningWinsOverTheFile: a block the file gives one pod and a
// container of another pod uses is the running pod's.
func TestRestoreRunningWinsOverTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "userns.json")
	a, _ := Open(path, Range{First: 65536, Length: 2 * BlockSize}, nil, testutil.Logger(t))
	m, _ := a.Mapping("stale")
	log := testutil.NewWarnLog(t)
	b, _ := Open(path, Range{First: 65536, Length: 2 * BlockSize}, nil, log.Logger)
	if err := b.Restore(map[string]pod.IDMapping{"running": m}); err != nil {
		t.Fatal(err)
	}
	if got := b.Held(); !slices.Equal(got, []string{"running"}) {
		t.Errorf("Held = %v", got)
	}
	if len(log.Files()) != 1 {
		t.Errorf("warnings %q, want one", log.Files())
	}
}
