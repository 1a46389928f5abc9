//go:build e2e

package network

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/google/nftables"
)

// guardComments returns the comments of pod uid's port guards, sorted.
func guardComments(t *testing.T, n *Pods, uid string) []string {
	t.Helper()
	c, err := nftables.New()
	must(t, err)
	n.nftMu.Lock()
	rules, err := n.guardRulesOf(c, uid)
	n.nftMu.Unlock()
	must(t, err)
	var out []string
	for _, r := range rules {
		out = append(out, ruleComment(r.UserData))
	}
	slices.Sort(out)
	return out
}

// wantGuards returns the comments pod uid's guards have at address ip.
func wantGuards(n *Pods, uid string, ip netip.Addr) []string {
	var out []string
	for _, r := range guardRules(guardTable(n.in.table()), uid, n.in.vethName(uid), podMAC(uid), ip) {
		out = append(out, ruleComment(r.UserData))
	}
	slices.Sort(out)
	return out
}

// TestGuardsRepaired: a new pod's guards are written without reading the
// chain, so SetUp must still find and replace guards it did not write:
// ones deleted by hand, ones an earlier tug left at another address, and a
// deleted table.
func TestGuardsRepaired(t *testing.T) {
	tests := []struct {
		name    string
		damage  func(t *testing.T, tn *testNet, uid string)
		restart bool
	}{
		{
			name: "guards deleted by hand come back on the next SetUp",
			damage: func(t *testing.T, tn *testNet, uid string) {
				must(t, tn.pods.deleteGuard(uid))
				tn.pods.nftMu.Lock()
				tn.pods.guarded[uid] = true // the process believes it still has them
				tn.pods.nftMu.Unlock()
			},
		},
		{
			name: "guards an earlier tug left at another address are replaced",
			damage: func(t *testing.T, tn *testNet, uid string) {
				must(t, tn.pods.deleteGuard(uid))
				c, err := nftables.New()
				must(t, err)
				for _, r := range guardRules(guardTable(tn.pods.in.table()), uid, tn.pods.in.vethName(uid), podMAC(uid), netip.MustParseAddr("10.201.0.99")) {
					c.AddRule(r)
				}
				must(t, c.Flush())
			},
			restart: true,
		},
		{
			name: "a deleted guard table is made again",
			damage: func(t *testing.T, tn *testNet, uid string) {
				c, err := nftables.New()
				must(t, err)
				c.DelTable(guardTable(tn.pods.in.table()))
				must(t, c.Flush())
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tn := newTestNet(t, "10.201.0.0/24")
			p, path := tn.pod("uid-a")
			ip := tn.setUp(tn.pods, p, path)
			want := wantGuards(tn.pods, "uid-a", ip)
			if got := guardComments(t, tn.pods, "uid-a"); !slices.Equal(got, want) {
				t.Fatalf("after the first SetUp: guards %q, want %q", got, want)
			}
			tt.damage(t, tn, "uid-a")
			if tt.restart {
				tn.restart()
			}
			if ip2 := tn.setUp(tn.pods, p, path); ip2 != ip {
				t.Fatalf("SetUp again = %s, want %s", ip2, ip)
			}
			if got := guardComments(t, tn.pods, "uid-a"); !slices.Equal(got, want) {
				t.Errorf("after SetUp again: guards %q, want %q", got, want)
			}
			// A second pod, new to this process, gets its guards too.
			q, qpath := tn.pod("uid-b")
			qip := tn.setUp(tn.pods, q, qpath)
			if got, want := guardComments(t, tn.pods, "uid-b"), wantGuards(tn.pods, "uid-b", qip); !slices.Equal(got, want) {
				t.Errorf("a new pod's guards %q, want %q", got, want)
			}
		})
	}
}
