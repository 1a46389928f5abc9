package network

import (
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"tug/internal/testutil"
)

// TestLeaseDamaged: a lease file a power cut damaged never stops tug and
// never hands its address to a new pod: the load says so (Warn naming the
// file), the address stays taken, and the pod that holds it gets it back
// on adoption, its lease rewritten.
func TestLeaseDamaged(t *testing.T) {
	prefix := netip.MustParsePrefix("10.201.0.0/24")
	for _, d := range testutil.Damages {
		t.Run(string(d), func(t *testing.T) {
			dir := t.TempDir()
			l := newLeases(dir, prefix, discard())
			a, err := l.allocate("uid-a")
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, a.String())
			testutil.DamageFile(t, path, d)
			log := testutil.NewWarnLog(t)
			l2 := newLeases(dir, prefix, log.Logger)
			b, err := l2.allocate("uid-b")
			if err != nil {
				t.Fatal(err)
			}
			if got := log.Files(); (d != testutil.DamageMissing) != slices.Contains(got, path) {
				t.Errorf("warnings name %q (damage %s)", got, d)
			}
			if d != testutil.DamageMissing && b == a {
				t.Errorf("a new pod got the damaged lease's address %s", a)
			}
			if b == a {
				return // missing: the address was free to give
			}
			if ok, err := l2.adopt("uid-a", a); err != nil || !ok {
				t.Fatalf("adopt = %v, %v", ok, err)
			}
			if data, _ := os.ReadFile(path); string(data) != "uid-a\n" {
				t.Errorf("lease after adoption %q", data)
			}
		})
	}
}
