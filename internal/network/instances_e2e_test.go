//go:build e2e

package network

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"testing"

	"github.com/vishvananda/netlink"
)

// TestInstancesShareANetns: two instances (own bridge, CIDR, state dir and
// instance name) in one network namespace, with a pod of the same UID in
// both: each lists only its own pods, tearing down a UID in one leaves the
// other's pod of that UID alone, a restart keeps both, and a third
// instance cannot take a bridge the first one claimed.
func TestInstancesShareANetns(t *testing.T) {
	a := newTestNet(t, "10.201.0.0/24")
	b := newTestNet(t, "10.202.0.0/24", func(c *Config) { c.Instance = "bench-1"; c.Bridge = "tugtest1" })
	for tn, uids := range map[*testNet][]string{a: {"uid-a", "uid-same"}, b: {"uid-b", "uid-same"}} {
		for i, uid := range uids {
			port := "808" + string(rune('0'+i))
			if tn == b {
				port = "809" + string(rune('0'+i))
			}
			p, path := tn.pod(uid, port+":80/TCP")
			tn.setUp(tn.pods, p, path)
		}
	}
	list := func(tn *testNet) []string {
		t.Helper()
		uids, err := tn.pods.List()
		must(t, err)
		return uids
	}
	veth := func(tn *testNet, uid string) bool {
		l, err := netlink.LinkByName(instance(tn.cfg.Instance).vethName(uid))
		return err == nil && l.Attrs().Alias == instance(tn.cfg.Instance).alias(uid)
	}
	check := func(when string, wantA, wantB []string) {
		t.Helper()
		if got := list(a); !slices.Equal(got, wantA) {
			t.Errorf("%s: default instance lists %v, want %v", when, got, wantA)
		}
		if got := list(b); !slices.Equal(got, wantB) {
			t.Errorf("%s: instance bench-1 lists %v, want %v", when, got, wantB)
		}
		for _, uid := range wantA {
			if !veth(a, uid) {
				t.Errorf("%s: the default instance's veth of %s is gone", when, uid)
			}
		}
		for _, uid := range wantB {
			if !veth(b, uid) {
				t.Errorf("%s: bench-1's veth of %s is gone", when, uid)
			}
		}
	}
	check("set up", []string{"uid-a", "uid-same"}, []string{"uid-b", "uid-same"})
	if instance("").vethName("uid-same") == instance("bench-1").vethName("uid-same") {
		t.Fatal("both instances name the veth of uid-same alike")
	}

	// Housekeeping in b would tear down whatever b lists; here b is asked
	// for a's pods too: nothing of a's goes.
	for _, uid := range []string{"uid-a", "uid-same"} {
		must(t, b.pods.TearDown(context.Background(), uid))
	}
	check("b tore down uid-a and uid-same", []string{"uid-a", "uid-same"}, []string{"uid-b"})
	a.restart()
	b.restart()
	check("restart", []string{"uid-a", "uid-same"}, []string{"uid-b"})
	if n := len(a.state().rules); n != 2 {
		t.Errorf("default instance has %d hostPort rules, want 2", n)
	}
	if n := len(b.state().rules); n != 1 {
		t.Errorf("bench-1 has %d hostPort rules, want 1", n)
	}

	// A third instance configured with a's bridge: refused at Init.
	cfg := a.cfg
	cfg.Instance, cfg.CIDR, cfg.StateDir = "other", netip.MustParsePrefix("10.203.0.0/24"), t.TempDir()
	other, err := New(cfg)
	must(t, err)
	if err := other.Init(context.Background()); !errors.Is(err, ErrBridgeInUse) {
		t.Errorf("Init on another instance's bridge = %v, want ErrBridgeInUse", err)
	}
	check("refused bridge", []string{"uid-a", "uid-same"}, []string{"uid-b"})
}
