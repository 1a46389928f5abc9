package network

import (
	"errors"
	"strings"
	"testing"
)

// TestInstanceNames checks the names each instance gives its objects: the
// default instance keeps the names of the versions before instances (so
// that an upgraded tug adopts its pods), and no instance takes another's
// veth alias, veth name or table for its own.
func TestInstanceNames(t *testing.T) {
	uids := []string{"a", "3f2b8f9e-1c5d-5a4e-9b7d-0e6f1a2b3c4d", strings.Repeat("x", maxUIDLen)}
	tests := []struct {
		in        instance
		table     string
		alias     string // of uids[0]
		bridge    string
		legacyVet bool // veth names are those of before instances
	}{
		{in: "", table: "tug", alias: "tug-pod:a", bridge: "tug-bridge:tug", legacyVet: true},
		{in: DefaultInstance, table: "tug", alias: "tug-pod:a", bridge: "tug-bridge:tug", legacyVet: true},
		{in: "bench-1", table: "tug-bench-1", alias: "tug-pod:bench-1:a", bridge: "tug-bridge:bench-1"},
		{in: "bench-10", table: "tug-bench-10", alias: "tug-pod:bench-10:a", bridge: "tug-bridge:bench-10"},
		{in: "e2e.a_b", table: "tug-e2e.a_b", alias: "tug-pod:e2e.a_b:a", bridge: "tug-bridge:e2e.a_b"},
	}
	// legacy is the veth name every tug gave a pod before instances.
	legacy := map[string]string{
		"a": "vethca978112ca1",
	}
	names := map[string]instance{}
	for _, tt := range tests {
		t.Run(string(tt.in), func(t *testing.T) {
			if got := tt.in.table(); got != tt.table {
				t.Errorf("table() = %q, want %q", got, tt.table)
			}
			if got := tt.in.alias(uids[0]); got != tt.alias {
				t.Errorf("alias(%q) = %q, want %q", uids[0], got, tt.alias)
			}
			if got := tt.in.bridgeAlias(); got != tt.bridge {
				t.Errorf("bridgeAlias() = %q, want %q", got, tt.bridge)
			}
			if got := tt.in.vethName("a"); (got == legacy["a"]) != tt.legacyVet {
				t.Errorf("vethName(a) = %q; legacy name %q, want legacy: %v", got, legacy["a"], tt.legacyVet)
			}
			for _, uid := range uids {
				n := tt.in.vethName(uid)
				if len(n) != 15 || !strings.HasPrefix(n, "veth") || n != tt.in.vethName(uid) {
					t.Errorf("vethName(%q) = %q: want veth and 11 hex digits, stable", uid, n)
				}
				if other, ok := names[n]; ok && other.table() != tt.in.table() {
					t.Errorf("vethName(%q) = %q, as for instance %q", uid, n, other)
				}
				names[n] = tt.in
				if got, ok := tt.in.uidFromAlias(tt.in.alias(uid)); !ok || got != uid {
					t.Errorf("alias round trip of %q = %q, %v", uid, got, ok)
				}
			}
		})
	}
	// Every instance's alias, seen by every other instance: never its own.
	for _, a := range tests {
		for _, b := range tests {
			if a.in.table() == b.in.table() {
				continue
			}
			if uid, ok := b.in.uidFromAlias(a.in.alias("a")); ok {
				t.Errorf("instance %q takes %q (instance %q's) for its pod %q", b.in, a.in.alias("a"), a.in, uid)
			}
		}
	}
	for _, alias := range []string{"docker veth", "", "tug-pod:", "tug-pod:a/b", "tug-bridge:tug"} {
		for _, tt := range tests {
			if uid, ok := tt.in.uidFromAlias(alias); ok {
				t.Errorf("instance %q takes foreign alias %q for pod %q", tt.in, alias, uid)
			}
		}
	}
}

func TestCheckInstance(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"", true},
		{"tug", true},
		{"testpodnetwork-0a1b2c", true},
		{"a.b_c-d", true},
		{"A1", true},
		{strings.Repeat("n", maxInstanceLen), true},
		{strings.Repeat("n", maxInstanceLen+1), false},
		{"a:b", false},
		{"a/b", false},
		{"a b", false},
		{"-a", false},
		{"a-", false},
		{"a--b", false},
		{".", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkInstance(tt.name)
			if (err == nil) != tt.ok || err != nil && !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("checkInstance(%q) = %v, want ok %v", tt.name, err, tt.ok)
			}
		})
	}
}
