package network

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"tug/internal/pod"
)

// tug's nftables layout: one table of its own, never a shared one, so that
// nothing tug does touches another program's (or another tug instance's)
// rules and nothing tug needs is in a chain someone else flushes. The
// default instance's table is "tug"; another instance's is "tug-<instance>".
//
//	table ip tug {
//		chain hostports {                # regular chain, the per-pod rules
//			tcp dport 8080 dnat to 10.201.0.2:80     comment "tug pod <uid> tcp *:8080 dnat 10.201.0.2:80"
//			ip daddr 192.0.2.1 udp dport 53 dnat to 10.201.0.3:53  comment "tug pod <uid> udp 192.0.2.1:53 dnat 10.201.0.3:53"
//		}
//		chain prerouting {               # type nat hook prerouting priority dstnat
//			ip daddr != 127.0.0.0/8 fib daddr type local jump hostports  comment "tug hostports to the node's addresses but loopback"
//		}
//		chain output {                   # type nat hook output priority dstnat
//			fib daddr type local jump hostports                      comment "tug hostports from the node, loopback included"
//		}
//		chain postrouting {              # type nat hook postrouting priority srcnat
//			ip saddr <cidr> ip daddr != <cidr> masquerade            comment "tug masquerade <cidr>"
//			ct status dnat ip saddr <cidr> ip daddr <cidr> masquerade  comment "tug hairpin <cidr>"
//			oifname <bridge> ip saddr 127.0.0.0/8 masquerade         comment "tug masquerade loopback via <bridge>"
//		}
//		chain input {                    # type filter hook input priority filter; policy accept
//			iifname <bridge> ip saddr 127.0.0.0/8 drop               comment "tug no loopback source via <bridge>"
//			iifname <bridge> ip daddr 127.0.0.0/8 ct status dnat accept  comment "tug loopback replies of hostports via <bridge>"
//			iifname <bridge> ip daddr 127.0.0.0/8 drop               comment "tug no other loopback destination via <bridge>"
//		}
//	}
//
// Every rule carries a comment (nftables user data) that states everything
// the rule does: a rule is checked by its comment, not by decoding its
// expressions, and a pod's rules are found by the UID in theirs. The base
// chains hold only the fixed rules; Init rewrites one of them only when
// its comments differ from the wanted ones (a changed CIDR or bridge), and
// never touches hostports, so a restart leaves running pods' rules alone.
//
// Loopback: a hostPort answers on 127.0.0.1 as on the node's other
// addresses. The output chain DNATs a connection to 127.0.0.1:<hostPort>
// like any other local address; the kernel then routes a packet whose
// source is 127.0.0.1 out of the bridge only because tug sets
// net.ipv4.conf.<bridge>.route_localnet (and only there: every other
// interface keeps treating 127.0.0.0/8 as martian), and the replies, whose
// destination conntrack turns back into 127.0.0.1, are accepted on the
// bridge for the same reason. What route_localnet opens is closed again in
// tug's own rules: the masquerade gives every packet with a loopback source
// that leaves through the bridge the bridge's address (no pod ever sees
// 127.0.0.1 as a peer, and nothing with a loopback source leaves the node),
// the input chain drops whatever arrives on the bridge with a loopback
// source or a loopback destination but the replies of those DNATed
// connections (a pod cannot reach the node's loopback services, the
// health and metrics port among them, by sending to 127.0.0.1 through its
// gateway), and prerouting never DNATs a packet that arrives with a
// loopback destination, so a hostPort on hostIP 127.0.0.1 answers only
// from the node itself.
//
// Known gap: a host firewall that drops forwarded packets (a filter
// forward chain with policy drop, as Docker installs) must let the pod
// CIDR through itself: an accept in tug's table cannot override a drop in
// another table.
const (
	// tableName is the table of the default instance; another instance's
	// is "tug-<instance>" (instance.table), laid out the same.
	tableName        = "tug"
	chainHostPorts   = "hostports"
	chainPrerouting  = "prerouting"
	chainOutput      = "output"
	chainPostrouting = "postrouting"
	chainInput       = "input"
	chainForward     = "forward"

	// podCommentPrefix starts the comment of every per-pod rule; the UID
	// and a space follow.
	podCommentPrefix = "tug pod "
)

// ipsDstNAT is the conntrack status bit IPS_DST_NAT ("ct status dnat").
const ipsDstNAT = 1 << 5

// forwardChain is the filter chain tug adds to its table when it was tug
// that turned IPv4 forwarding on (see Pods.ensureForwardFilter):
//
//	chain forward {                  # type filter hook forward priority filter; policy accept
//		iifname <bridge> ip saddr <cidr> accept   comment "tug forward from pods <cidr> via <bridge>"
//		oifname <bridge> ip daddr <cidr> accept   comment "tug forward to pods <cidr> via <bridge>"
//		iifname <bridge> drop                     comment "tug forward no other source via <bridge>"
//		oifname <bridge> drop                     comment "tug forward no other destination via <bridge>"
//		iifgroup <bridgeGroup> accept             comment "tug forward from other tug instances' pods"
//		oifgroup <bridgeGroup> accept             comment "tug forward to other tug instances' pods"
//		drop                                      comment "tug forward nothing else (tug enabled ip_forward)"
//	}
//
// A drop in any table is final, so the chain lets through the pods of
// every tug instance in the network namespace, not only its own: their
// bridges are found by their interface group (bridgeGroup), since this
// instance knows neither their names nor their CIDRs. Only its own
// bridge's traffic is held to its CIDR.
func forwardChain(t *nftables.Table) *nftables.Chain {
	return &nftables.Chain{Name: chainForward, Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookForward, Priority: nftables.ChainPriorityFilter}
}

// bridgeGroup is the interface group (IFLA_GROUP) of every tug instance's
// bridge: how an instance's forward chain recognises the others' pod
// traffic. 0x7475 is "tu"; group 0 is every link's default.
const bridgeGroup = 0x7475

// forwardRules returns the rules of the forward chain: only traffic of the
// pod networks, through tug bridges, is routed.
func forwardRules(t *nftables.Table, bridge string, cidr netip.Prefix) []*nftables.Rule {
	cidr = cidr.Masked()
	ifname := func(key expr.MetaKey) []expr.Any {
		name := make([]byte, unix.IFNAMSIZ)
		copy(name, bridge)
		return []expr.Any{
			&expr.Meta{Key: key, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: name},
		}
	}
	group := func(key expr.MetaKey) []expr.Any {
		return []expr.Any{
			&expr.Meta{Key: key, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.NativeEndian.PutUint32(bridgeGroup)},
		}
	}
	accept := []expr.Any{&expr.Verdict{Kind: expr.VerdictAccept}}
	drop := []expr.Any{&expr.Verdict{Kind: expr.VerdictDrop}}
	rule := func(comment string, parts ...[]expr.Any) *nftables.Rule {
		var exprs []expr.Any
		for _, p := range parts {
			exprs = append(exprs, p...)
		}
		return &nftables.Rule{Table: t, Chain: forwardChain(t), Exprs: exprs, UserData: commentData(comment)}
	}
	return []*nftables.Rule{
		rule("tug forward from pods "+cidr.String()+" via "+bridge, ifname(expr.MetaKeyIIFNAME), matchPrefix(12, cidr, true), accept),
		rule("tug forward to pods "+cidr.String()+" via "+bridge, ifname(expr.MetaKeyOIFNAME), matchPrefix(16, cidr, true), accept),
		rule("tug forward no other source via "+bridge, ifname(expr.MetaKeyIIFNAME), drop),
		rule("tug forward no other destination via "+bridge, ifname(expr.MetaKeyOIFNAME), drop),
		rule("tug forward from other tug instances' pods", group(expr.MetaKeyIIFGROUP), accept),
		rule("tug forward to other tug instances' pods", group(expr.MetaKeyOIFGROUP), accept),
		rule("tug forward nothing else (tug enabled ip_forward)", drop),
	}
}

// natTable returns tug's table named name (instance.table).
func natTable(name string) *nftables.Table {
	return &nftables.Table{Name: name, Family: nftables.TableFamilyIPv4}
}

// chains returns tug's chains in the order they must be created
// (hostports first: the base chains jump to it).
func chains(t *nftables.Table) []*nftables.Chain {
	nat := func(name string, hook *nftables.ChainHook, prio *nftables.ChainPriority) *nftables.Chain {
		return &nftables.Chain{Name: name, Table: t, Type: nftables.ChainTypeNAT, Hooknum: hook, Priority: prio}
	}
	return []*nftables.Chain{
		{Name: chainHostPorts, Table: t},
		nat(chainPrerouting, nftables.ChainHookPrerouting, nftables.ChainPriorityNATDest),
		nat(chainOutput, nftables.ChainHookOutput, nftables.ChainPriorityNATDest),
		nat(chainPostrouting, nftables.ChainHookPostrouting, nftables.ChainPriorityNATSource),
		{Name: chainInput, Table: t, Type: nftables.ChainTypeFilter, Hooknum: nftables.ChainHookInput, Priority: nftables.ChainPriorityFilter},
	}
}

// baseChains names the base chains whose rules baseRules returns, in the
// order Init checks them.
var baseChains = []string{chainPrerouting, chainOutput, chainPostrouting, chainInput}

// chainByName returns the chain of t named name (one of chains(t)).
func chainByName(t *nftables.Table, name string) *nftables.Chain {
	for _, c := range chains(t) {
		if c.Name == name {
			return c
		}
	}
	panic("network: unknown chain " + name)
}

// loopback is 127.0.0.0/8, the node's loopback network.
var loopback = netip.MustParsePrefix("127.0.0.0/8")

// baseRules returns the fixed rules of each base chain for the pod bridge
// and CIDR.
func baseRules(t *nftables.Table, bridge string, cidr netip.Prefix) map[string][]*nftables.Rule {
	cidr = cidr.Masked()
	local := []expr.Any{ // fib daddr type local
		&expr.Fib{Register: 1, FlagDADDR: true, ResultADDRTYPE: true},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.NativeEndian.PutUint32(unix.RTN_LOCAL)},
	}
	onBridge := func(key expr.MetaKey) []expr.Any { // iifname/oifname <bridge>
		return []expr.Any{
			&expr.Meta{Key: key, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: ifname(bridge)},
		}
	}
	jump := []expr.Any{&expr.Verdict{Kind: expr.VerdictJump, Chain: chainHostPorts}}
	masq := []expr.Any{&expr.Masq{}}
	accept := []expr.Any{&expr.Verdict{Kind: expr.VerdictAccept}}
	drop := []expr.Any{&expr.Verdict{Kind: expr.VerdictDrop}}
	rule := func(chain, comment string, parts ...[]expr.Any) *nftables.Rule {
		var exprs []expr.Any
		for _, p := range parts {
			exprs = append(exprs, p...)
		}
		return &nftables.Rule{Table: t, Chain: chainByName(t, chain), Exprs: exprs, UserData: commentData(comment)}
	}
	dnatStatus := []expr.Any{ // ct status dnat
		&expr.Ct{Register: 1, Key: expr.CtKeySTATUS},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: binaryutil.NativeEndian.PutUint32(ipsDstNAT), Xor: make([]byte, 4)},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: make([]byte, 4)},
	}
	return map[string][]*nftables.Rule{
		chainPrerouting: {rule(chainPrerouting, "tug hostports to the node's addresses but loopback",
			matchPrefix(16, loopback, false), local, jump)},
		chainOutput: {rule(chainOutput, "tug hostports from the node, loopback included", local, jump)},
		chainPostrouting: {
			rule(chainPostrouting, "tug masquerade "+cidr.String(), matchPrefix(12, cidr, true), matchPrefix(16, cidr, false), masq),
			rule(chainPostrouting, "tug hairpin "+cidr.String(), dnatStatus, matchPrefix(12, cidr, true), matchPrefix(16, cidr, true), masq),
			rule(chainPostrouting, "tug masquerade loopback via "+bridge, onBridge(expr.MetaKeyOIFNAME), matchPrefix(12, loopback, true), masq),
		},
		chainInput: {
			rule(chainInput, "tug no loopback source via "+bridge, onBridge(expr.MetaKeyIIFNAME), matchPrefix(12, loopback, true), drop),
			rule(chainInput, "tug loopback replies of hostports via "+bridge, onBridge(expr.MetaKeyIIFNAME), matchPrefix(16, loopback, true), dnatStatus, accept),
			rule(chainInput, "tug no other loopback destination via "+bridge, onBridge(expr.MetaKeyIIFNAME), matchPrefix(16, loopback, true), drop),
		},
	}
}

// matchPrefix matches the IPv4 header field at offset (12: saddr, 16:
// daddr) against p ("ip saddr p", or with in false "ip saddr != p").
func matchPrefix(offset uint32, p netip.Prefix, in bool) []expr.Any {
	p = p.Masked()
	op := expr.CmpOpEq
	if !in {
		op = expr.CmpOpNeq
	}
	mask := binary.BigEndian.AppendUint32(nil, ^uint32(0)<<(32-p.Bits()))
	return []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: 4},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: mask, Xor: make([]byte, 4)},
		&expr.Cmp{Op: op, Register: 1, Data: p.Addr().AsSlice()},
	}
}

// hostPort is one port a pod publishes on the node.
type hostPort struct {
	proto    pod.Protocol
	hostIP   netip.Addr // the zero Addr: every local address
	hostPort uint16
	podIP    netip.Addr
	port     uint16
}

// comment returns the comment of the rule for hp of the pod uid; it
// states the whole rule.
func (hp hostPort) comment(uid string) string {
	host := "*"
	if hp.hostIP.IsValid() {
		host = hp.hostIP.String()
	}
	return fmt.Sprintf("%s%s %s %s:%d dnat %s", podCommentPrefix, uid, strings.ToLower(string(hp.proto)),
		host, hp.hostPort, netip.AddrPortFrom(hp.podIP, hp.port))
}

// hostPorts returns the ports the pod's app containers publish on the node
// (hostPort != 0), in manifest order. A port with an IPv6 hostIP is
// returned in skipped instead: the pod network is IPv4 only. An
// unspecified hostIP ("0.0.0.0") means every address.
func hostPorts(p *pod.Pod, podIP netip.Addr) (ports []hostPort, skipped []string) {
	for _, c := range p.Spec.Containers {
		for _, cp := range c.Ports {
			if cp.HostPort == 0 {
				continue
			}
			hp := hostPort{proto: cp.Protocol, hostPort: uint16(cp.HostPort), podIP: podIP, port: uint16(cp.ContainerPort)}
			if hp.proto == "" {
				hp.proto = pod.ProtocolTCP
			}
			if cp.HostIP != "" {
				ip, err := netip.ParseAddr(cp.HostIP)
				if err != nil || !ip.Unmap().Is4() {
					skipped = append(skipped, fmt.Sprintf("%s %s:%d", cp.Protocol, cp.HostIP, cp.HostPort))
					continue
				}
				if ip = ip.Unmap(); !ip.IsUnspecified() {
					hp.hostIP = ip
				}
			}
			ports = append(ports, hp)
		}
	}
	return ports, skipped
}

// hostPortRule returns the DNAT rule for hp of the pod uid, for the
// hostports chain of t.
func hostPortRule(t *nftables.Table, uid string, hp hostPort) *nftables.Rule {
	proto := byte(unix.IPPROTO_TCP)
	if hp.proto == pod.ProtocolUDP {
		proto = unix.IPPROTO_UDP
	}
	var exprs []expr.Any
	if hp.hostIP.IsValid() {
		exprs = append(exprs,
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: hp.hostIP.AsSlice()})
	}
	exprs = append(exprs,
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{proto}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.BigEndian.PutUint16(hp.hostPort)},
		&expr.Immediate{Register: 1, Data: hp.podIP.AsSlice()},
		&expr.Immediate{Register: 2, Data: binaryutil.BigEndian.PutUint16(hp.port)},
		&expr.NAT{Type: expr.NATTypeDestNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: 1, RegProtoMin: 2, Specified: true},
	)
	return &nftables.Rule{Table: t, Chain: chainByName(t, chainHostPorts), Exprs: exprs, UserData: commentData(hp.comment(uid))}
}

// commentData encodes a rule comment as nft(8) does, so that
// `nft list ruleset` shows it.
func commentData(s string) []byte {
	// type NFTNL_UDATA_RULE_COMMENT (0), length, text, NUL
	return append([]byte{0, byte(len(s) + 1)}, append([]byte(s), 0)...)
}

// ruleComment returns the comment in a rule's user data, or "". It reads
// the type-length-value list defensively: a rule someone else put in
// tug's chains may carry anything.
func ruleComment(udata []byte) string {
	for len(udata) >= 2 {
		typ, n := udata[0], int(udata[1])
		if len(udata) < 2+n {
			return ""
		}
		if typ == 0 {
			return strings.TrimSuffix(string(udata[2:2+n]), "\x00")
		}
		udata = udata[2+n:]
	}
	return ""
}

// uidFromComment returns the pod UID in a per-pod rule's comment.
func uidFromComment(comment string) (string, bool) {
	rest, ok := strings.CutPrefix(comment, podCommentPrefix)
	if !ok {
		return "", false
	}
	uid, _, _ := strings.Cut(rest, " ")
	return uid, checkUID(uid) == nil
}
