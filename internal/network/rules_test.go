package network

import (
	"bytes"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"

	"tug/internal/pod"
)

func TestHostPorts(t *testing.T) {
	ip := netip.MustParseAddr("10.87.0.5")
	port := func(cp, hp int32, hostIP string, proto pod.Protocol) pod.ContainerPort {
		return pod.ContainerPort{ContainerPort: cp, HostPort: hp, HostIP: hostIP, Protocol: proto}
	}
	tests := []struct {
		name        string
		containers  []pod.Container
		init        []pod.Container
		want        []string // comments for uid "u"
		wantSkipped int
	}{
		{name: "no ports"},
		{
			name:       "container ports without hostPort are not published",
			containers: []pod.Container{{Ports: []pod.ContainerPort{port(80, 0, "", pod.ProtocolTCP)}}},
		},
		{
			name: "tcp and udp, several containers, manifest order",
			containers: []pod.Container{
				{Ports: []pod.ContainerPort{port(80, 8080, "", pod.ProtocolTCP), port(53, 5353, "", pod.ProtocolUDP)}},
				{Ports: []pod.ContainerPort{port(443, 8443, "", "")}},
			},
			want: []string{
				"tug pod u tcp *:8080 dnat 10.87.0.5:80",
				"tug pod u udp *:5353 dnat 10.87.0.5:53",
				"tug pod u tcp *:8443 dnat 10.87.0.5:443",
			},
		},
		{
			name: "hostIP: a node address, any address, IPv4-mapped, IPv6 skipped",
			containers: []pod.Container{{Ports: []pod.ContainerPort{
				port(80, 8080, "192.0.2.1", pod.ProtocolTCP),
				port(81, 8081, "0.0.0.0", pod.ProtocolTCP),
				port(82, 8082, "::ffff:192.0.2.1", pod.ProtocolTCP),
				port(83, 8083, "2001:db8::1", pod.ProtocolTCP),
				port(84, 8084, "::", pod.ProtocolTCP),
			}}},
			want: []string{
				"tug pod u tcp 192.0.2.1:8080 dnat 10.87.0.5:80",
				"tug pod u tcp *:8081 dnat 10.87.0.5:81",
				"tug pod u tcp 192.0.2.1:8082 dnat 10.87.0.5:82",
			},
			wantSkipped: 2,
		},
		{
			name: "init containers never publish",
			init: []pod.Container{{Ports: []pod.ContainerPort{port(80, 8080, "", pod.ProtocolTCP)}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &pod.Pod{}
			p.Spec.Containers, p.Spec.InitContainers = tt.containers, tt.init
			ports, skipped := hostPorts(p, ip)
			var got []string
			for _, hp := range ports {
				got = append(got, hp.comment("u"))
			}
			if !slices.Equal(got, tt.want) || len(skipped) != tt.wantSkipped {
				t.Errorf("hostPorts = %q, skipped %q; want %q and %d skipped", got, skipped, tt.want, tt.wantSkipped)
			}
		})
	}
}

func TestHostPortRule(t *testing.T) {
	tab := natTable(tableName)
	tests := []struct {
		name     string
		hp       hostPort
		wantLen  int
		wantAddr bool // matches a daddr
	}{
		{"any address", hostPort{proto: pod.ProtocolTCP, hostPort: 8080, podIP: netip.MustParseAddr("10.87.0.5"), port: 80}, 7, false},
		{"one address", hostPort{proto: pod.ProtocolUDP, hostIP: netip.MustParseAddr("192.0.2.1"), hostPort: 53, podIP: netip.MustParseAddr("10.87.0.5"), port: 5353}, 9, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := hostPortRule(tab, "uid-1", tt.hp)
			if r.Chain.Name != chainHostPorts || r.Table.Name != tableName || len(r.Exprs) != tt.wantLen {
				t.Fatalf("rule in %s/%s with %d expressions", r.Table.Name, r.Chain.Name, len(r.Exprs))
			}
			if c := ruleComment(r.UserData); c != tt.hp.comment("uid-1") {
				t.Errorf("comment = %q", c)
			}
			if uid, ok := uidFromComment(ruleComment(r.UserData)); !ok || uid != "uid-1" {
				t.Errorf("uid from comment = %q, %v", uid, ok)
			}
			nat, ok := r.Exprs[len(r.Exprs)-1].(*expr.NAT)
			if !ok || nat.Type != expr.NATTypeDestNAT || nat.RegAddrMin != 1 || nat.RegProtoMin != 2 {
				t.Errorf("last expression = %#v, want a DNAT from registers 1 and 2", r.Exprs[len(r.Exprs)-1])
			}
			imm := r.Exprs[len(r.Exprs)-3].(*expr.Immediate)
			if a, _ := netip.AddrFromSlice(imm.Data); a != tt.hp.podIP {
				t.Errorf("DNAT address = %v, want %s", imm.Data, tt.hp.podIP)
			}
			payload, isPayload := r.Exprs[0].(*expr.Payload)
			if tt.wantAddr != (isPayload && payload.Offset == 16) {
				t.Errorf("first expression = %#v; daddr match wanted: %v", r.Exprs[0], tt.wantAddr)
			}
		})
	}
}

func TestBaseRules(t *testing.T) {
	rules := baseRules(natTable(tableName), "tug0", netip.MustParsePrefix("10.87.0.9/24"))
	want := map[string][]string{
		chainPrerouting: {"tug hostports to the node's addresses but loopback"},
		chainOutput:     {"tug hostports from the node, loopback included"},
		chainPostrouting: {"tug masquerade 10.87.0.0/24", "tug hairpin 10.87.0.0/24",
			"tug masquerade loopback via tug0"},
		chainInput: {"tug no loopback source via tug0", "tug loopback replies of hostports via tug0",
			"tug no other loopback destination via tug0"},
	}
	for chain, comments := range want {
		var got []string
		for _, r := range rules[chain] {
			if r.Chain.Name != chain {
				t.Errorf("rule %q in chain %s, want %s", ruleComment(r.UserData), r.Chain.Name, chain)
			}
			got = append(got, ruleComment(r.UserData))
			if _, ok := uidFromComment(ruleComment(r.UserData)); ok {
				t.Errorf("base rule %q reads as a pod's", ruleComment(r.UserData))
			}
		}
		if !slices.Equal(got, comments) {
			t.Errorf("%s: %q, want %q", chain, got, comments)
		}
	}
	if len(rules) != len(want) || len(baseChains) != len(want) {
		t.Errorf("rules for %d chains, %d base chains, want %d", len(rules), len(baseChains), len(want))
	}
	for _, name := range baseChains {
		if c := chainByName(natTable(tableName), name); c.Hooknum == nil {
			t.Errorf("base chain %s has no hook", name)
		}
	}
	// The masquerade excludes the pod CIDR as destination: its last
	// comparison before the verdict is a "!=" on the masked daddr.
	masq := rules[chainPostrouting][0].Exprs
	if cmp, ok := masq[len(masq)-2].(*expr.Cmp); !ok || cmp.Op != expr.CmpOpNeq || netip.AddrFrom4([4]byte(cmp.Data)).String() != "10.87.0.0" {
		t.Errorf("masquerade's daddr match = %#v", masq[len(masq)-2])
	}
}

// TestLoopbackRules: the rules that confine route_localnet match what
// their comments say: the pod bridge by name, 127.0.0.0/8 as source or
// destination, with the verdict named.
func TestLoopbackRules(t *testing.T) {
	rules := baseRules(natTable(tableName), "tugb0", netip.MustParsePrefix("10.87.1.0/24"))
	type match struct {
		offset uint32 // 12: saddr, 16: daddr
		op     expr.CmpOp
	}
	tests := []struct {
		chain   string
		index   int
		ifKey   expr.MetaKey // 0: no interface match
		addr    match
		dnat    bool // requires "ct status dnat"
		verdict any  // &expr.Masq{} or an expr.VerdictKind
	}{
		{chainPrerouting, 0, 0, match{16, expr.CmpOpNeq}, false, expr.VerdictJump},
		{chainPostrouting, 2, expr.MetaKeyOIFNAME, match{12, expr.CmpOpEq}, false, &expr.Masq{}},
		{chainInput, 0, expr.MetaKeyIIFNAME, match{12, expr.CmpOpEq}, false, expr.VerdictDrop},
		{chainInput, 1, expr.MetaKeyIIFNAME, match{16, expr.CmpOpEq}, true, expr.VerdictAccept},
		{chainInput, 2, expr.MetaKeyIIFNAME, match{16, expr.CmpOpEq}, false, expr.VerdictDrop},
	}
	for _, tt := range tests {
		r := rules[tt.chain][tt.index]
		name := ruleComment(r.UserData)
		t.Run(name, func(t *testing.T) {
			var ifKey expr.MetaKey
			var addr *match
			dnat := false
			for i, e := range r.Exprs {
				switch e := e.(type) {
				case *expr.Meta:
					if e.Key == expr.MetaKeyIIFNAME || e.Key == expr.MetaKeyOIFNAME {
						ifKey = e.Key
						if c := r.Exprs[i+1].(*expr.Cmp); !bytes.Equal(c.Data, ifname("tugb0")) {
							t.Errorf("interface %q, want tugb0", c.Data)
						}
					}
				case *expr.Payload:
					c := r.Exprs[i+2].(*expr.Cmp)
					if netip.AddrFrom4([4]byte(c.Data)) == netip.MustParseAddr("127.0.0.0") {
						addr = &match{e.Offset, c.Op}
					}
				case *expr.Ct:
					dnat = e.Key == expr.CtKeySTATUS
				}
			}
			if ifKey != tt.ifKey {
				t.Errorf("interface match %v, want %v", ifKey, tt.ifKey)
			}
			if addr == nil || *addr != tt.addr {
				t.Errorf("127.0.0.0/8 match %+v, want %+v", addr, tt.addr)
			}
			if dnat != tt.dnat {
				t.Errorf("ct status dnat: %v, want %v", dnat, tt.dnat)
			}
			last := r.Exprs[len(r.Exprs)-1]
			switch want := tt.verdict.(type) {
			case *expr.Masq:
				if _, ok := last.(*expr.Masq); !ok {
					t.Errorf("last expression %#v, want a masquerade", last)
				}
			case expr.VerdictKind:
				if v, ok := last.(*expr.Verdict); !ok || v.Kind != want {
					t.Errorf("last expression %#v, want verdict %v", last, want)
				}
			}
		})
	}
	// The node's own connections to any local address, loopback included,
	// reach the hostports chain.
	for _, e := range rules[chainOutput][0].Exprs {
		if _, ok := e.(*expr.Payload); ok {
			t.Errorf("the output chain's jump matches an address: %#v", e)
		}
	}
}

func TestRuleComment(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"ours", commentData("tug pod u tcp *:1 dnat 10.0.0.2:1"), "tug pod u tcp *:1 dnat 10.0.0.2:1"},
		{"empty", nil, ""},
		{"truncated", []byte{0, 40, 'a'}, ""},
		{"other type first", append([]byte{7, 1, 9}, commentData("x")...), "x"},
		{"no NUL", []byte{0, 1, 'x'}, "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ruleComment(tt.data); got != tt.want {
				t.Errorf("ruleComment = %q, want %q", got, tt.want)
			}
		})
	}
	for _, c := range []string{"tug hostports", "tug pod ", "tug pod bad/uid x", "other"} {
		if uid, ok := uidFromComment(c); ok {
			t.Errorf("uidFromComment(%q) = %q", c, uid)
		}
	}
}

func TestSameComments(t *testing.T) {
	r := func(c string) *nftables.Rule { return &nftables.Rule{UserData: commentData(c)} }
	tests := []struct {
		name       string
		have, want []*nftables.Rule
		same       bool
	}{
		{"both empty", nil, nil, true},
		{"any order", []*nftables.Rule{r("a"), r("b")}, []*nftables.Rule{r("b"), r("a")}, true},
		{"one more", []*nftables.Rule{r("a"), r("a")}, []*nftables.Rule{r("a")}, false},
		{"changed", []*nftables.Rule{r("a")}, []*nftables.Rule{r("b")}, false},
	}
	for _, tt := range tests {
		if got := sameComments(tt.have, tt.want); got != tt.same {
			t.Errorf("%s: sameComments = %v", tt.name, got)
		}
	}
}

func TestNewConfig(t *testing.T) {
	cidr := netip.MustParsePrefix("10.87.0.0/24")
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{name: "defaults", cfg: Config{StateDir: "/x", Bridge: "tug0", CIDR: cidr}},
		{name: "slash 30", cfg: Config{StateDir: "/x", Bridge: "tug0", CIDR: netip.MustParsePrefix("10.1.2.4/30")}},
		{name: "no state dir", cfg: Config{Bridge: "tug0", CIDR: cidr}, wantErr: "state dir"},
		{name: "no bridge", cfg: Config{StateDir: "/x", CIDR: cidr}, wantErr: "no bridge"},
		{name: "no CIDR", cfg: Config{StateDir: "/x", Bridge: "tug0"}, wantErr: "no pod CIDR"},
		{name: "ipv6", cfg: Config{StateDir: "/x", Bridge: "tug0", CIDR: netip.MustParsePrefix("fd00::/64")}, wantErr: "IPv4"},
		{name: "too small", cfg: Config{StateDir: "/x", Bridge: "tug0", CIDR: netip.MustParsePrefix("10.0.0.0/31")}, wantErr: "/30"},
		{name: "too big", cfg: Config{StateDir: "/x", Bridge: "tug0", CIDR: netip.MustParsePrefix("10.0.0.0/8")}, wantErr: "/16"},
		{name: "long bridge name", cfg: Config{StateDir: "/x", CIDR: cidr, Bridge: "a-very-long-bridge"}, wantErr: "bridge"},
		{name: "bridge name with slash", cfg: Config{StateDir: "/x", CIDR: cidr, Bridge: "a/b"}, wantErr: "bridge"},
		{name: "instance", cfg: Config{StateDir: "/x", Bridge: "tug0", CIDR: cidr, Instance: "bench-1"}},
		{name: "bad instance", cfg: Config{StateDir: "/x", Bridge: "tug0", CIDR: cidr, Instance: "a:b"}, wantErr: "instance"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(tt.cfg)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if p.cfg.Bridge == "" || !p.cfg.CIDR.IsValid() || p.log == nil || p.gw != p.cfg.CIDR.Addr().Next() {
					t.Errorf("config not kept or defaults not filled in: %+v, gateway %s", p.cfg, p.gw)
				}
				return
			}
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("New = %v; want ErrInvalidConfig mentioning %q", err, tt.wantErr)
			}
		})
	}
}

// TestForwardRules: the forward chain holds its own bridge's traffic to
// its CIDR, then routes any tug instance's bridge (by interface group),
// then drops the rest, in that order.
func TestForwardRules(t *testing.T) {
	rules := forwardRules(natTable(instance("bench-1").table()), "tugb0", netip.MustParsePrefix("10.87.1.9/24"))
	want := []struct {
		comment string
		verdict expr.VerdictKind
		meta    expr.MetaKey // the first match; 0 for none
	}{
		{"tug forward from pods 10.87.1.0/24 via tugb0", expr.VerdictAccept, expr.MetaKeyIIFNAME},
		{"tug forward to pods 10.87.1.0/24 via tugb0", expr.VerdictAccept, expr.MetaKeyOIFNAME},
		{"tug forward no other source via tugb0", expr.VerdictDrop, expr.MetaKeyIIFNAME},
		{"tug forward no other destination via tugb0", expr.VerdictDrop, expr.MetaKeyOIFNAME},
		{"tug forward from other tug instances' pods", expr.VerdictAccept, expr.MetaKeyIIFGROUP},
		{"tug forward to other tug instances' pods", expr.VerdictAccept, expr.MetaKeyOIFGROUP},
		{"tug forward nothing else (tug enabled ip_forward)", expr.VerdictDrop, 0},
	}
	if len(rules) != len(want) {
		t.Fatalf("%d rules, want %d", len(rules), len(want))
	}
	for i, w := range want {
		r := rules[i]
		if got := ruleComment(r.UserData); got != w.comment {
			t.Errorf("rule %d: comment %q, want %q", i, got, w.comment)
		}
		if r.Table.Name != "tug-bench-1" || r.Chain.Name != chainForward {
			t.Errorf("rule %d in %s/%s", i, r.Table.Name, r.Chain.Name)
		}
		v, ok := r.Exprs[len(r.Exprs)-1].(*expr.Verdict)
		if !ok || v.Kind != w.verdict {
			t.Errorf("rule %d: last expression %#v, want verdict %v", i, r.Exprs[len(r.Exprs)-1], w.verdict)
		}
		m, isMeta := r.Exprs[0].(*expr.Meta)
		if w.meta == 0 && isMeta || w.meta != 0 && (!isMeta || m.Key != w.meta) {
			t.Errorf("rule %d: first expression %#v, want meta key %v", i, r.Exprs[0], w.meta)
		}
		if w.meta == expr.MetaKeyIIFGROUP || w.meta == expr.MetaKeyOIFGROUP {
			c := r.Exprs[1].(*expr.Cmp)
			if !bytes.Equal(c.Data, binaryutil.NativeEndian.PutUint32(bridgeGroup)) {
				t.Errorf("rule %d matches group %x, want %x", i, c.Data, bridgeGroup)
			}
		}
	}
}
