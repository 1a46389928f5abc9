package network

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// A pod's bridge port lets through only what tug leased the pod: IPv4 and
// ARP, from the pod's MAC and IPv4 address. A container may hold NET_RAW
// (containerd's default capabilities) and every capability in its own
// network namespace, so without these guards one pod could claim another
// pod's address (a gratuitous ARP re-points the node's neighbour entry; a
// spoofed source takes its replies) or send IPv6 Router Advertisements that
// install routes and addresses on the node and in other pods. The pod
// network is IPv4 only, so nothing else has a reason to leave a pod.
//
// The guards live in a bridge-family table of tug's own, named like its ip
// table, evaluated for every frame a port receives, before it is bridged or
// delivered to the node:
//
//	table bridge tug {
//		chain ports {                    # type filter hook prerouting priority 0
//			iifname <veth> ether saddr != <mac> drop                    comment "tug pod <uid> guard <veth> ether saddr <mac>"
//			iifname <veth> ether type arp arp saddr ether != <mac> drop comment "tug pod <uid> guard <veth> arp saddr ether <mac>"
//			iifname <veth> ether type arp arp saddr ip != <ip> drop     comment "tug pod <uid> guard <veth> arp saddr ip <ip>"
//			iifname <veth> ether type ip ip saddr != <ip> drop          comment "tug pod <uid> guard <veth> ip saddr <ip>"
//			iifname <veth> ether type arp accept                        comment "tug pod <uid> guard <veth> accept arp"
//			iifname <veth> ether type ip accept                         comment "tug pod <uid> guard <veth> accept ip"
//			iifname <veth> drop                                         comment "tug pod <uid> guard <veth> drop other"
//		}
//	}
//
// Besides, IPv6 is off on the bridge and on the host ends of the veths
// (no address, no Router Advertisement is acted on), and a pod's network
// namespace is created with accept_ra and autoconf off.
const chainPorts = "ports"

// guardTable returns tug's bridge-family table named name.
func guardTable(name string) *nftables.Table {
	return &nftables.Table{Name: name, Family: nftables.TableFamilyBridge}
}

// portsChain returns the chain of t that holds the port guards.
func portsChain(t *nftables.Table) *nftables.Chain {
	return &nftables.Chain{Name: chainPorts, Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookPrerouting, Priority: nftables.ChainPriorityFilter}
}

// Ethernet types, as they stand in a frame.
var (
	etherTypeIPv4 = binaryutil.BigEndian.PutUint16(unix.ETH_P_IP)
	etherTypeARP  = binaryutil.BigEndian.PutUint16(unix.ETH_P_ARP)
)

// guardRules returns the rules that hold the port veth of the pod uid to
// mac and ip.
func guardRules(t *nftables.Table, uid, veth string, mac net.HardwareAddr, ip netip.Addr) []*nftables.Rule {
	iif := []expr.Any{
		&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: ifname(veth)},
	}
	load := func(base expr.PayloadBase, offset, n uint32) *expr.Payload {
		return &expr.Payload{DestRegister: 1, Base: base, Offset: offset, Len: n}
	}
	is := func(data []byte) *expr.Cmp { return &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: data} }
	isNot := func(data []byte) *expr.Cmp { return &expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: data} }
	etherType := load(expr.PayloadBaseLLHeader, 12, 2)
	drop := &expr.Verdict{Kind: expr.VerdictDrop}
	accept := &expr.Verdict{Kind: expr.VerdictAccept}
	rule := func(what string, exprs ...expr.Any) *nftables.Rule {
		comment := fmt.Sprintf("%s%s guard %s %s", podCommentPrefix, uid, veth, what)
		return &nftables.Rule{Table: t, Chain: portsChain(t), Exprs: append(append([]expr.Any{}, iif...), exprs...), UserData: commentData(comment)}
	}
	return []*nftables.Rule{
		rule("ether saddr "+mac.String(), load(expr.PayloadBaseLLHeader, 6, 6), isNot(mac), drop),
		rule("arp saddr ether "+mac.String(), etherType, is(etherTypeARP), load(expr.PayloadBaseNetworkHeader, 8, 6), isNot(mac), drop),
		rule("arp saddr ip "+ip.String(), etherType, is(etherTypeARP), load(expr.PayloadBaseNetworkHeader, 14, 4), isNot(ip.AsSlice()), drop),
		rule("ip saddr "+ip.String(), etherType, is(etherTypeIPv4), load(expr.PayloadBaseNetworkHeader, 12, 4), isNot(ip.AsSlice()), drop),
		rule("accept arp", etherType, is(etherTypeARP), accept),
		rule("accept ip", etherType, is(etherTypeIPv4), accept),
		rule("drop other", drop),
	}
}

// ifname returns name as the kernel compares interface names: IFNAMSIZ
// bytes, NUL-padded.
func ifname(name string) []byte {
	b := make([]byte, unix.IFNAMSIZ)
	copy(b, name)
	return b
}

// ensureGuardTable creates tug's bridge table and its ports chain where
// missing. The caller holds n.nftMu.
func (n *Pods) ensureGuardTable(c *nftables.Conn) error {
	t := guardTable(n.in.table())
	c.AddTable(t)
	c.AddChain(portsChain(t))
	if err := c.Flush(); err != nil {
		return fmt.Errorf("create nftables table bridge %s: %w", t.Name, err)
	}
	return nil
}

// guardRulesOf returns the rules of the ports chain tagged with uid (every
// pod's when uid is ""), recreating the table first if it is missing.
// The caller holds n.nftMu.
func (n *Pods) guardRulesOf(c *nftables.Conn, uid string) ([]*nftables.Rule, error) {
	t := guardTable(n.in.table())
	if _, err := c.ListTableOfFamily(t.Name, nftables.TableFamilyBridge); err != nil {
		if !errors.Is(err, unix.ENOENT) {
			return nil, fmt.Errorf("find nftables table bridge %s: %w", t.Name, err)
		}
		if err := n.ensureGuardTable(c); err != nil {
			return nil, err
		}
	}
	rules, err := c.GetRules(t, portsChain(t))
	if err != nil {
		return nil, fmt.Errorf("list rules of chain bridge %s %s: %w", t.Name, chainPorts, err)
	}
	var mine []*nftables.Rule
	for _, r := range rules {
		if u, ok := uidFromComment(ruleComment(r.UserData)); ok && (uid == "" || u == uid) {
			mine = append(mine, r)
		}
	}
	return mine, nil
}

// ensureGuard makes the guards of the pod's port exactly the wanted ones,
// replacing them in one batch when they differ.
//
// A pod that has none (a new pod: n.guarded, loaded from the table once,
// knows every pod's) gets them in one batch without reading the chain
// first: the chain holds seven rules per pod, and reading it for each of
// many pods started at once, under n.nftMu, made them queue. A pod that
// has some, or a batch that fails (a table someone deleted), takes the
// path that reads, compares and repairs.
func (n *Pods) ensureGuard(uid string, ip netip.Addr) error {
	t := guardTable(n.in.table())
	want := guardRules(t, uid, n.in.vethName(uid), podMAC(uid), ip)
	if fresh, err := n.unguarded(uid); err != nil {
		return err
	} else if fresh && n.addGuards(uid, want) == nil {
		return nil
	}
	_, _, err := n.syncPodRules(uid, n.guardRulesOf, want, "port guards of veth "+n.in.vethName(uid))
	if err == nil {
		n.nftMu.Lock()
		n.guarded[uid] = true
		n.nftMu.Unlock()
	}
	return err
}

// unguarded reports whether pod uid has no port guards, reading every
// pod's from the table the first time.
func (n *Pods) unguarded(uid string) (bool, error) {
	n.nftMu.Lock()
	loaded := n.guarded != nil
	n.nftMu.Unlock()
	if !loaded {
		rules, err := n.allGuardRules()
		if err != nil {
			return false, err
		}
		guarded := map[string]bool{}
		for _, r := range rules {
			if u, ok := uidFromComment(ruleComment(r.UserData)); ok {
				guarded[u] = true
			}
		}
		n.nftMu.Lock()
		if n.guarded == nil {
			n.guarded = guarded
		}
		n.nftMu.Unlock()
	}
	n.nftMu.Lock()
	defer n.nftMu.Unlock()
	return !n.guarded[uid], nil
}

// addGuards adds the pod's guards in one batch, and notes that it has
// them.
func (n *Pods) addGuards(uid string, rules []*nftables.Rule) error {
	n.nftMu.Lock()
	defer n.nftMu.Unlock()
	c, err := nftables.New()
	if err != nil {
		return err
	}
	for _, r := range rules {
		c.AddRule(r)
	}
	if err := c.Flush(); err != nil {
		return err
	}
	n.guarded[uid] = true
	return nil
}

// deleteGuard deletes the guards of the pod's port, after its veth is
// gone.
func (n *Pods) deleteGuard(uid string) (err error) {
	n.nftMu.Lock()
	defer n.nftMu.Unlock()
	defer func() {
		if err == nil {
			delete(n.guarded, uid)
		}
	}()
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	exists, err := tableOfFamilyExists(c, n.in.table(), nftables.TableFamilyBridge)
	if err != nil || !exists {
		return err
	}
	rules, err := n.guardRulesOf(c, uid)
	if err != nil || len(rules) == 0 {
		return err
	}
	for _, r := range rules {
		if err := c.DelRule(r); err != nil {
			return fmt.Errorf("delete port guard: %w", err)
		}
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("delete port guards: %w", err)
	}
	return nil
}

// allGuardRules returns every pod's port guards; none when the table does
// not exist.
func (n *Pods) allGuardRules() ([]*nftables.Rule, error) {
	n.nftMu.Lock()
	defer n.nftMu.Unlock()
	c, err := nftables.New()
	if err != nil {
		return nil, fmt.Errorf("nftables: %w", err)
	}
	exists, err := tableOfFamilyExists(c, n.in.table(), nftables.TableFamilyBridge)
	if err != nil || !exists {
		return nil, err
	}
	return n.guardRulesOf(c, "")
}

// tableOfFamilyExists reports whether the table name of family exists.
func tableOfFamilyExists(c *nftables.Conn, name string, family nftables.TableFamily) (bool, error) {
	if _, err := c.ListTableOfFamily(name, family); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return false, nil
		}
		return false, fmt.Errorf("find nftables table %s: %w", name, err)
	}
	return true, nil
}

// disableIPv6 turns IPv6 off on the node's link name: the link gets no
// address and acts on no Router Advertisement. A kernel without IPv6 has
// nothing to turn off.
func disableIPv6(name string) error {
	err := writeSysctl("net/ipv6/conf/"+name+"/disable_ipv6", "1")
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("turn IPv6 off on %s: %w", name, err)
	}
	return nil
}
