package network

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestHostRange(t *testing.T) {
	tests := []struct {
		prefix       string
		lo, hi, gw   string
		wantLeasable []string
		wantNot      []string
	}{
		{"10.201.0.0/24", "10.201.0.2", "10.201.0.254", "10.201.0.1",
			[]string{"10.201.0.2", "10.201.0.100", "10.201.0.254"},
			[]string{"10.201.0.0", "10.201.0.1", "10.201.0.255", "10.201.1.2", "::1"}},
		{"192.168.7.8/29", "192.168.7.10", "192.168.7.14", "192.168.7.9",
			[]string{"192.168.7.10", "192.168.7.14"},
			[]string{"192.168.7.8", "192.168.7.9", "192.168.7.15", "192.168.7.16"}},
		{"10.0.0.5/30", "10.0.0.6", "10.0.0.6", "10.0.0.5", // not masked
			[]string{"10.0.0.6"}, []string{"10.0.0.4", "10.0.0.5", "10.0.0.7"}},
		{"10.0.0.0/16", "10.0.0.2", "10.0.255.254", "10.0.0.1",
			[]string{"10.0.1.0", "10.0.1.255"}, []string{"10.0.255.255"}},
	}
	for _, tt := range tests {
		t.Run(tt.prefix, func(t *testing.T) {
			p := netip.MustParsePrefix(tt.prefix)
			lo, hi := hostRange(p)
			if fromV4(lo).String() != tt.lo || fromV4(hi).String() != tt.hi {
				t.Errorf("hostRange = %s..%s, want %s..%s", fromV4(lo), fromV4(hi), tt.lo, tt.hi)
			}
			if g := gateway(p); g.String() != tt.gw {
				t.Errorf("gateway = %s, want %s", g, tt.gw)
			}
			for _, a := range tt.wantLeasable {
				if !leasable(p, netip.MustParseAddr(a)) {
					t.Errorf("%s not leasable", a)
				}
			}
			for _, a := range tt.wantNot {
				if leasable(p, netip.MustParseAddr(a)) {
					t.Errorf("%s leasable", a)
				}
			}
		})
	}
}

// op is one step of an IPAM scenario: allocate or release uid, expecting
// want ("" for no check, "full" for ErrNoAddress).
type op struct {
	release bool
	uid     string
	want    string
}

func alloc(uid, want string) op { return op{uid: uid, want: want} }
func free(uid string) op        { return op{release: true, uid: uid} }

func TestLeasesAllocate(t *testing.T) {
	tests := []struct {
		name     string
		prefix   string
		existing map[string]string // file name -> content, before the first use
		ops      []op
		wantList []string
	}{
		{
			name:     "first free after the gateway",
			prefix:   "10.201.0.0/24",
			ops:      []op{alloc("a", "10.201.0.2"), alloc("b", "10.201.0.3"), alloc("a", "10.201.0.2")},
			wantList: []string{"a", "b"},
		},
		{
			name:     "round robin: a released address is not reused at once",
			prefix:   "10.201.0.0/24",
			ops:      []op{alloc("a", "10.201.0.2"), alloc("b", "10.201.0.3"), free("a"), alloc("c", "10.201.0.4"), alloc("a", "10.201.0.5")},
			wantList: []string{"a", "b", "c"},
		},
		{
			name:   "slash 29 holds five pods, then wraps to a freed one",
			prefix: "10.201.0.0/29",
			ops: []op{
				alloc("a", "10.201.0.2"), alloc("b", "10.201.0.3"), alloc("c", "10.201.0.4"),
				alloc("d", "10.201.0.5"), alloc("e", "10.201.0.6"), alloc("f", "full"), alloc("g", "full"),
				free("b"), alloc("f", "10.201.0.3"), alloc("g", "full"), alloc("e", "10.201.0.6"),
			},
			wantList: []string{"a", "c", "d", "e", "f"},
		},
		{
			name:     "slash 30 holds one",
			prefix:   "10.201.0.0/30",
			ops:      []op{alloc("a", "10.201.0.2"), alloc("b", "full"), free("a"), alloc("b", "10.201.0.2")},
			wantList: []string{"b"},
		},
		{
			name:     "restart: existing leases kept, search continues after the highest",
			prefix:   "10.201.0.0/24",
			existing: map[string]string{"10.201.0.2": "a\n", "10.201.0.9": "b\n", ".tmp-123": "c\n"},
			ops:      []op{alloc("b", "10.201.0.9"), alloc("a", "10.201.0.2"), alloc("c", "10.201.0.10")},
			wantList: []string{"a", "b", "c"},
		},
		{
			name:     "restart: wraps past the top of the range",
			prefix:   "10.201.0.0/29",
			existing: map[string]string{"10.201.0.6": "a\n"},
			ops:      []op{alloc("b", "10.201.0.2")},
			wantList: []string{"a", "b"},
		},
		{
			name:     "unreadable lease keeps its address taken and is not listed",
			prefix:   "10.201.0.0/29",
			existing: map[string]string{"10.201.0.2": "bad uid\n", "10.201.0.3": ""},
			ops:      []op{alloc("a", "10.201.0.4")},
			wantList: []string{"a"},
		},
		{
			name:     "lease outside a changed prefix: listed, replaced on allocate",
			prefix:   "10.201.0.0/24",
			existing: map[string]string{"10.88.0.7": "a\n", "10.201.0.0": "x\n", "10.201.0.1": "y\n"},
			ops:      []op{alloc("a", "10.201.0.2")},
			wantList: []string{"a", "x", "y"},
		},
		{
			name:     "release removes every lease of the uid",
			prefix:   "10.201.0.0/24",
			existing: map[string]string{"10.88.0.7": "a\n", "10.201.0.5": "a\n", "10.201.0.6": "b\n"},
			ops:      []op{free("a"), free("a"), free("nobody")},
			wantList: []string{"b"},
		},
		{
			name:     "files that are not leases are ignored",
			prefix:   "10.201.0.0/24",
			existing: map[string]string{"README": "x", "010.201.0.2": "a\n"},
			ops:      []op{alloc("a", "10.201.0.2")},
			wantList: []string{"a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tt.existing {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			l := newLeases(dir, netip.MustParsePrefix(tt.prefix), discard())
			for i, o := range tt.ops {
				if o.release {
					if err := l.release(o.uid); err != nil {
						t.Fatalf("op %d: release %s: %v", i, o.uid, err)
					}
					continue
				}
				a, err := l.allocate(o.uid)
				switch {
				case o.want == "full":
					if !errors.Is(err, ErrNoAddress) || !strings.Contains(err.Error(), netip.MustParsePrefix(tt.prefix).Masked().String()) {
						t.Fatalf("op %d: allocate %s = %v, %v; want ErrNoAddress naming the prefix", i, o.uid, a, err)
					}
				case err != nil:
					t.Fatalf("op %d: allocate %s: %v", i, o.uid, err)
				case a.String() != o.want:
					t.Fatalf("op %d: allocate %s = %s, want %s", i, o.uid, a, o.want)
				}
			}
			got, err := l.list()
			if err != nil || !slices.Equal(got, tt.wantList) {
				t.Errorf("list = %v, %v; want %v", got, err, tt.wantList)
			}
			// A fresh instance reads the same state from disk.
			again, err := newLeases(dir, netip.MustParsePrefix(tt.prefix), discard()).list()
			if err != nil || !slices.Equal(again, tt.wantList) {
				t.Errorf("list after reload = %v, %v; want %v", again, err, tt.wantList)
			}
			if m, _ := filepath.Glob(filepath.Join(dir, tmpPrefix+"*")); len(m) != 0 {
				t.Errorf("temporary files left: %v", m)
			}
		})
	}
}

func TestLeaseFileFormat(t *testing.T) {
	dir := t.TempDir()
	l := newLeases(dir, netip.MustParsePrefix("10.201.0.0/24"), discard())
	if _, err := l.allocate("8c0a7f4e-uid"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "10.201.0.2"))
	if err != nil || string(b) != "8c0a7f4e-uid\n" {
		t.Errorf("lease file = %q, %v", b, err)
	}
}

// TestLeasesTwoProcesses checks the on-disk exclusivity: two instances on
// the same directory (as two processes would be) never hand out the same
// address, even though neither knows the other's leases in memory, and
// each instance's concurrent allocations (files written outside its lock)
// leave every lease holding its own UID.
func TestLeasesTwoProcesses(t *testing.T) {
	dir := t.TempDir()
	p := netip.MustParsePrefix("10.201.0.0/26")
	a, b := newLeases(dir, p, discard()), newLeases(dir, p, discard())
	a.list() // both load the empty directory first
	b.list()
	seen := map[netip.Addr]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 40 {
		l := a
		if i%2 == 1 {
			l = b
		}
		wg.Go(func() {
			uid := fmt.Sprintf("uid-%d", i)
			addr, err := l.allocate(uid)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if other, dup := seen[addr]; dup {
				t.Errorf("%s leased to %s and %s", addr, other, uid)
			}
			seen[addr] = uid
		})
	}
	wg.Wait()
	if uids, _ := newLeases(dir, p, discard()).list(); len(uids) != 40 {
		t.Errorf("%d leases on disk, want 40", len(uids))
	}
	for addr, uid := range seen {
		if b, err := os.ReadFile(filepath.Join(dir, addr.String())); err != nil || string(b) != uid+"\n" {
			t.Errorf("lease %s = %q, %v; want %s's", addr, b, err, uid)
		}
	}
}

func TestCheckUID(t *testing.T) {
	tests := []struct {
		uid string
		ok  bool
	}{
		{"3f2b8f9e-1c5d-5a4e-9b7d-0e6f1a2b3c4d", true},
		{"web_1.x", true},
		{"", false},
		{"a b", false},
		{"a\nb", false},
		{"../x", false},
		{"..", false},
		{strings.Repeat("x", maxUIDLen+1), false},
	}
	for _, tt := range tests {
		err := checkUID(tt.uid)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrInvalidUID)) {
			t.Errorf("checkUID(%q) = %v, want ok=%v", tt.uid, err, tt.ok)
		}
	}
}

func TestLeasesAdopt(t *testing.T) {
	prefix := netip.MustParsePrefix("10.201.0.0/24")
	tests := []struct {
		name    string
		files   map[string]string // lease file -> content
		addr    string
		adopted bool
	}{
		{"no lease at all", nil, "10.201.0.7", true},
		{"corrupt lease of that address", map[string]string{"10.201.0.7": "\x00junk"}, "10.201.0.7", true},
		{"another pod's lease", map[string]string{"10.201.0.7": "uid-b\n"}, "10.201.0.7", false},
		{"outside the range", nil, "10.202.0.7", false},
		{"the gateway", nil, "10.201.0.1", false},
		{"the pod has a lease already", map[string]string{"10.201.0.9": "uid-a\n"}, "10.201.0.7", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for f, c := range tt.files {
				if err := os.WriteFile(filepath.Join(dir, f), []byte(c), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			l := newLeases(dir, prefix, discard())
			got, err := l.adopt("uid-a", netip.MustParseAddr(tt.addr))
			if err != nil || got != tt.adopted {
				t.Fatalf("adopt = %v, %v; want %v", got, err, tt.adopted)
			}
			if !tt.adopted {
				return
			}
			if a, err := l.allocate("uid-a"); err != nil || a.String() != tt.addr {
				t.Errorf("allocate after adopt = %s, %v; want %s", a, err, tt.addr)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, tt.addr)); string(b) != "uid-a\n" {
				t.Errorf("lease file %q, want uid-a", b)
			}
		})
	}
}
