package network

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/nftables"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"tug/internal/pod"
	"tug/internal/steptime"
)

// minBits and maxBits bound the pod CIDR's prefix length: a /30 holds one
// pod (network, gateway, pod, broadcast); a /16 holds 65533, beyond any
// single node. The agent's configuration has the same rule
// (config.MinPodCIDRBits, config.MaxPodCIDRBits); this is the defensive
// check of what the package can do.
const (
	minBits = 16
	maxBits = 30
)

// Config configures Pods. Bridge, CIDR and StateDir are required; Log and
// HostIP have defaults.
type Config struct {
	// Bridge is the name of the pods' bridge (--bridge-name). Required.
	Bridge string
	// CIDR is the IPv4 pod network (--pod-cidr), between /16 and /30. The
	// bridge holds its first host address (the pods' gateway) and the
	// pods get the others. Required (the default is the agent's
	// configuration's, config.DefaultPodCIDR).
	CIDR netip.Prefix
	// StateDir holds the leases, in StateDir/leases (tug passes
	// <root-dir>/network). Required.
	StateDir string
	// HostIP is the node's address reported by HostIP. Default: the
	// preferred source address of the default route, looked up at most
	// every hostIPRefresh.
	HostIP netip.Addr
	// Instance is the identity of this tug on the node: the containerd
	// namespace (--containerd-namespace). It names the nftables table
	// ("tug" for DefaultInstance, "tug-<instance>" otherwise) and goes into
	// the veths' names and aliases and the bridge's alias, so that List and
	// TearDown see only this instance's pieces and several tugs share one
	// network namespace (each with its own bridge, CIDR and state dir).
	// Default DefaultInstance.
	Instance string
	// Log receives state changes. Default: discard.
	Log *slog.Logger
}

// Pods connects pods' network namespaces to the node: a bridge holding the
// gateway address, one veth pair per pod (host end on the bridge, "eth0"
// in the pod), host-local IPAM with leases on disk, outbound masquerade
// and hostPort DNAT in an nftables table of tug's own (see rules.go for
// the layout). It works in the network namespace of the process that
// calls it, and uses netlink and nftables over netlink only: no ip, nft or
// iptables binary.
//
// Every method is idempotent and restartable: SetUp checks each piece and
// creates or repairs only what is missing or wrong, so it can be called on
// every sync of a pod, after a tug restart, or after a crash in the middle
// of an earlier SetUp; TearDown removes whatever pieces exist. List finds
// every kind of leftover (a lease, a veth by its alias, a rule by its
// comment), so a caller that tears down every listed UID without a pod
// leaves nothing behind.
//
// Pods is safe for concurrent use by different pods (one goroutine per
// pod); calls for the same pod must not overlap (the pod worker serialises
// them). IPAM allocation and nftables batches are serialised internally.
//
// Several Pods may share a network namespace when each has its own
// Config.Instance, Bridge, CIDR and StateDir: each then has a table of its
// own and knows its veths by their names and aliases (see instance).
type Pods struct {
	cfg  Config
	in   instance
	gw   netip.Addr
	log  *slog.Logger
	ipam *leases

	nftMu sync.Mutex // serialises nftables reads and batches
	// guarded are the pods whose port guards are in the table (nftMu; nil
	// until read from the table, see ensureGuard).
	guarded map[string]bool

	mu      sync.Mutex
	hairpin map[string]int // uid -> ifindex of the veth whose hairpin mode is set

	nodeMu    sync.Mutex
	nodeReady bool // ensureNode has succeeded since Init

	ports ports // the sockets that hold the pods' hostPorts

	hostIPMu sync.Mutex
	hostIP   netip.Addr // the last looked-up default route's address
	hostIPAt time.Time  // when hostIP was looked up
}

// hostIPRefresh is how long a looked-up node address is reused: every pod
// status carries it, and a route dump per status would cost an idle agent
// more than all else it does (the kubelet refreshes its node addresses
// every 10 s too).
const hostIPRefresh = 10 * time.Second

// New checks cfg, fills in the default of Log and returns a Pods. It changes
// nothing on the node; Init does.
func New(cfg Config) (*Pods, error) {
	switch {
	case cfg.Bridge == "":
		return nil, fmt.Errorf("%w: no bridge name", ErrInvalidConfig)
	case !cfg.CIDR.IsValid():
		return nil, fmt.Errorf("%w: no pod CIDR", ErrInvalidConfig)
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	cfg.CIDR = cfg.CIDR.Masked()
	switch {
	case !cfg.CIDR.Addr().Is4():
		return nil, fmt.Errorf("%w: pod CIDR %s: only IPv4 is supported", ErrInvalidConfig, cfg.CIDR)
	case cfg.CIDR.Bits() < minBits || cfg.CIDR.Bits() > maxBits:
		return nil, fmt.Errorf("%w: pod CIDR %s: prefix length must be between /%d and /%d", ErrInvalidConfig, cfg.CIDR, minBits, maxBits)
	case len(cfg.Bridge) > unix.IFNAMSIZ-1 || strings.ContainsAny(cfg.Bridge, "/: \t\n") || cfg.Bridge == "." || cfg.Bridge == "..":
		return nil, fmt.Errorf("%w: bridge name %q: at most %d characters, no '/', ':' or spaces", ErrInvalidConfig, cfg.Bridge, unix.IFNAMSIZ-1)
	case cfg.StateDir == "":
		return nil, fmt.Errorf("%w: no state dir", ErrInvalidConfig)
	}
	if err := checkInstance(cfg.Instance); err != nil {
		return nil, err
	}
	return &Pods{
		cfg:     cfg,
		in:      instance(cfg.Instance),
		gw:      gateway(cfg.CIDR),
		log:     cfg.Log,
		ipam:    newLeases(filepath.Join(cfg.StateDir, "leases"), cfg.CIDR, cfg.Log),
		hairpin: make(map[string]int),
	}, nil
}

// Init prepares the node if pods use it already (leases or the bridge
// exist, after a restart): IPv4 forwarding on, the bridge up and holding
// the gateway address (first host address of the CIDR, with the CIDR's
// prefix length), tug's nftables table with its base chains, and
// route_localnet on the bridge (rules.go says why); otherwise the first
// SetUp does. It is idempotent: on a restart it keeps the bridge,
// the pods' veths, leases and hostPort rules, and recreates only what is
// missing. Init must run before the first SetUp.
func (n *Pods) Init(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	leases, err := n.ipam.list() // report a bad state dir now
	if err != nil {
		return err
	}
	_, brErr := netlink.LinkByName(n.cfg.Bridge)
	n.nodeMu.Lock()
	n.nodeReady = false
	n.nodeMu.Unlock()
	if len(leases) == 0 && isNotFound(brErr) {
		return nil // nothing to keep: the first SetUp prepares the node
	}
	if err := n.ensureNode(); err != nil {
		return err
	}
	return n.holdPublishedPorts()
}

// holdPublishedPorts binds again, after a restart, the sockets of the
// hostPorts that running pods publish (found by their rules), before any
// pod is synced: a pod that had a port keeps it, whatever order the pods
// are synced in. A port that a program took while tug was down stays that
// program's: the pod's rule for it is deleted (so the program gets its
// traffic) and the pod's next SetUp reports the port in use.
func (n *Pods) holdPublishedPorts() error {
	rules, err := n.allPodRules()
	if err != nil {
		return err
	}
	want := map[string][]portKey{}
	for _, r := range rules {
		if uid, k, ok := keyFromComment(ruleComment(r.UserData)); ok && !slices.Contains(want[uid], k) {
			want[uid] = append(want[uid], k)
		}
	}
	for _, uid := range slices.Sorted(maps.Keys(want)) {
		if err := n.ports.acquire(uid, want[uid]); err != nil {
			n.log.Warn("a hostPort of a running pod was taken while tug was down; no longer forwarding the pod's hostPorts", "uid", uid, "err", err)
			if err := n.deleteRules(uid); err != nil {
				return err
			}
		}
	}
	return nil
}

// Close closes the sockets that hold the pods' hostPorts (tug stops; they
// close anyway when the process exits). The rules stay; the next Init
// holds their ports again.
func (n *Pods) Close() error {
	n.ports.closeAll()
	return nil
}

// ensureNode prepares the node for pods once: IPv4 forwarding on, the
// bridge, tug's nftables table, route_localnet on the bridge. A node that
// only ever runs hostNetwork pods is left as it was.
func (n *Pods) ensureNode() error {
	n.nodeMu.Lock()
	defer n.nodeMu.Unlock()
	if n.nodeReady {
		return nil
	}
	enabled, err := n.enableForwarding()
	if err != nil {
		return err
	}
	if err := n.ensureBridge(); err != nil {
		return err
	}
	if err := writeSysctl("net/ipv4/conf/"+n.cfg.Bridge+"/forwarding", "1"); err != nil {
		return fmt.Errorf("enable forwarding on %s: %w", n.cfg.Bridge, err)
	}
	if err := disableIPv6(n.cfg.Bridge); err != nil {
		return err
	}
	n.nftMu.Lock()
	err = n.ensureTable()
	if err == nil && enabled {
		err = n.ensureForwardFilter()
	}
	if err == nil {
		var c *nftables.Conn
		if c, err = nftables.New(); err == nil {
			err = n.ensureGuardTable(c)
		}
	}
	n.nftMu.Unlock()
	if err != nil {
		return err
	}
	// Only once the input chain confines it (see rules.go): 127.0.0.0/8
	// may cross the bridge, so that hostPorts answer on 127.0.0.1.
	if err := writeSysctl("net/ipv4/conf/"+n.cfg.Bridge+"/route_localnet", "1"); err != nil {
		return fmt.Errorf("enable route_localnet on %s: %w", n.cfg.Bridge, err)
	}
	n.nodeReady = true
	return nil
}

// forwardingMarker is the file, in the state dir, that says tug turned
// IPv4 forwarding on (it was off): tug then routes nothing but pod traffic.
const forwardingMarker = "ip_forward-enabled-by-tug"

// enableForwarding turns IPv4 forwarding on and reports whether it was tug
// that did (now, or before a restart: the marker file says so).
func (n *Pods) enableForwarding() (bool, error) {
	marker := filepath.Join(n.cfg.StateDir, forwardingMarker)
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_forward")
	if err != nil {
		return false, fmt.Errorf("read IPv4 forwarding: %w", err)
	}
	if strings.TrimSpace(string(b)) != "1" {
		if err := os.MkdirAll(n.cfg.StateDir, 0o700); err != nil {
			return false, fmt.Errorf("create state dir: %w", err)
		}
		if err := os.WriteFile(marker, []byte("tug turned net.ipv4.ip_forward on; it forwards only pod traffic\n"), 0o600); err != nil {
			return false, fmt.Errorf("record that tug enables IPv4 forwarding: %w", err)
		}
		if err := writeSysctl("net/ipv4/ip_forward", "1"); err != nil {
			return false, fmt.Errorf("enable IPv4 forwarding: %w", err)
		}
		n.log.Info("turned IPv4 forwarding on; only pod traffic is forwarded", "table", n.in.table(), "chain", chainForward)
		return true, nil
	}
	_, err = os.Stat(marker)
	return err == nil, nil
}

// ensureForwardFilter makes tug's forward chain hold exactly its rules:
// forwarding was off before tug, so nothing but the pods' traffic may be
// routed through the node now. (When forwarding was on already, whoever
// turned it on decides what is routed, and tug adds no chain.) The caller
// holds n.nftMu.
func (n *Pods) ensureForwardFilter() error {
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	t := natTable(n.in.table())
	ch := forwardChain(t)
	c.AddChain(ch)
	if err := c.Flush(); err != nil {
		return fmt.Errorf("create chain %s of table ip %s: %w", chainForward, n.in.table(), err)
	}
	want := forwardRules(t, n.cfg.Bridge, n.cfg.CIDR)
	have, err := c.GetRules(t, ch)
	if err != nil {
		return fmt.Errorf("list rules of chain %s: %w", chainForward, err)
	}
	if sameComments(have, want) {
		return nil
	}
	c.FlushChain(ch)
	for _, r := range want {
		c.AddRule(r)
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("write the forward rules of table ip %s: %w", n.in.table(), err)
	}
	return nil
}

// ensureBridge creates the bridge if missing, gives it the gateway
// address (removing addresses of an earlier CIDR) and brings it up.
func (n *Pods) ensureBridge() error {
	name := n.cfg.Bridge
	br, err := netlink.LinkByName(name)
	if isNotFound(err) {
		attrs := netlink.NewLinkAttrs()
		attrs.Name = name
		// A fixed MAC: a bridge without one takes the lowest MAC of its
		// ports, so the gateway's MAC would change as pods come and go and
		// the pods' ARP caches would point to the wrong one.
		attrs.HardwareAddr = bridgeMAC(name)
		err = netlink.LinkAdd(&netlink.Bridge{LinkAttrs: attrs})
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("create bridge %s: %w", name, err)
		}
		n.log.Info("created the pod bridge", "bridge", name)
		br, err = netlink.LinkByName(name)
	}
	if err != nil {
		return fmt.Errorf("find bridge %s: %w", name, err)
	}
	if br.Type() != "bridge" {
		return fmt.Errorf("%w: %s is a %s link, not a bridge", ErrInvalidConfig, name, br.Type())
	}
	if err := n.claimBridge(br); err != nil {
		return err
	}
	if g := br.Attrs().Group; g == 0 {
		if err := netlink.LinkSetGroup(br, bridgeGroup); err != nil {
			return fmt.Errorf("set interface group of %s: %w", name, err)
		}
	} else if g != bridgeGroup {
		n.log.Warn("the pod bridge is in another interface group; other tug instances' forward chains will not route its pods", "bridge", name, "group", g)
	}
	addrs, err := netlink.AddrList(br, netlink.FAMILY_V4)
	if err != nil {
		return fmt.Errorf("list addresses of %s: %w", name, err)
	}
	want := netip.PrefixFrom(n.gw, n.cfg.CIDR.Bits())
	have := false
	for _, a := range addrs {
		if ipNetPrefix(a.IPNet) == want {
			have = true
			continue
		}
		if err := netlink.AddrDel(br, &a); err != nil && !errors.Is(err, unix.EADDRNOTAVAIL) {
			return fmt.Errorf("remove old address %s from %s: %w", a.IPNet, name, err)
		}
		n.log.Info("removed an old address from the pod bridge", "bridge", name, "address", a.IPNet.String())
	}
	if !have {
		err := netlink.AddrAdd(br, &netlink.Addr{IPNet: prefixIPNet(want)})
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("add address %s to %s: %w", want, name, err)
		}
	}
	if br.Attrs().Flags&net.FlagUp == 0 {
		if err := netlink.LinkSetUp(br); err != nil {
			return fmt.Errorf("bring %s up: %w", name, err)
		}
	}
	return nil
}

// claimBridge marks the bridge as this instance's (its alias), unless it
// is another tug instance's: two instances sharing a bridge would take
// each other's gateway address off it. A bridge with no alias (one an
// earlier tug made, or the admin) is taken; one with an alias that is not
// a tug's is used and left as it is.
func (n *Pods) claimBridge(br netlink.Link) error {
	alias, want := br.Attrs().Alias, n.in.bridgeAlias()
	switch {
	case alias == want:
		return nil
	case strings.HasPrefix(alias, bridgeAliasPrefix):
		return fmt.Errorf("%w: %s has alias %q; this tug is %q (give each tug its own --bridge-name)", ErrBridgeInUse, br.Attrs().Name, alias, want)
	case alias != "":
		return nil
	}
	if err := netlink.LinkSetAlias(br, want); err != nil {
		return fmt.Errorf("set alias of %s: %w", br.Attrs().Name, err)
	}
	return nil
}

// bridgeMAC returns a stable, locally administered unicast MAC for the
// bridge named name.
func bridgeMAC(name string) net.HardwareAddr {
	sum := sha256.Sum256([]byte("tug bridge " + name))
	mac := net.HardwareAddr(sum[:6])
	mac[0] = mac[0]&^0x01 | 0x02
	return mac
}

// ensureTable creates tug's table and chains where missing and rewrites a
// base chain whose fixed rules differ from the wanted ones. It never
// touches the hostports chain. The caller holds n.nftMu.
func (n *Pods) ensureTable() error {
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	t := natTable(n.in.table())
	c.AddTable(t)
	for _, ch := range chains(t) {
		c.AddChain(ch)
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("create nftables table ip %s: %w", n.in.table(), err)
	}
	want := baseRules(t, n.cfg.Bridge, n.cfg.CIDR)
	changed := false
	for _, name := range baseChains {
		ch := chainByName(t, name)
		have, err := c.GetRules(t, ch)
		if err != nil {
			return fmt.Errorf("list rules of chain %s: %w", name, err)
		}
		if sameComments(have, want[name]) {
			continue
		}
		c.FlushChain(ch)
		for _, r := range want[name] {
			c.AddRule(r)
		}
		changed = true
	}
	if changed {
		if err := c.Flush(); err != nil {
			return fmt.Errorf("write the base rules of table ip %s: %w", n.in.table(), err)
		}
		n.log.Info("wrote the pod network's nftables rules", "table", n.in.table(), "cidr", n.cfg.CIDR.String())
	}
	return nil
}

// SetUp connects the pod's network namespace, pinned at netnsPath, to the
// bridge, publishes its hostPorts and returns its IP. The same UID gets
// the same address again, across restarts. SetUp is called on every sync
// of the pod: when everything is in place it only reads (a few netlink
// requests and one nftables dump) and changes nothing; whatever is missing
// or wrong (a half-done earlier SetUp, changed hostPorts, a deleted table)
// is created or replaced. For a hostNetwork pod it does nothing and
// returns HostIP.
//
// A full range returns an error wrapping ErrNoAddress that names the pod
// and the CIDR; other pods are not affected.
func (n *Pods) SetUp(ctx context.Context, p *pod.Pod, netnsPath string) (netip.Addr, error) {
	if err := ctx.Err(); err != nil {
		return netip.Addr{}, err
	}
	uid := p.Metadata.UID
	if err := checkUID(uid); err != nil {
		return netip.Addr{}, fmt.Errorf("set up network of pod %s: %w", p.FullName(), err)
	}
	if p.Spec.HostNetwork {
		return n.HostIP(), nil
	}
	st := steptime.From(ctx)
	if err := n.ensureNode(); err != nil {
		return netip.Addr{}, fmt.Errorf("set up network of pod %s: %w", p.FullName(), err)
	}
	st.Step("node")
	log := n.log.With("pod", p.FullName(), "uid", uid)
	published, _ := hostPorts(p, netip.IPv4Unspecified())
	if err := n.ports.acquire(uid, portsOf(published)); err != nil {
		// Never forward a port the pod does not hold (after a restart, a
		// program may have taken it).
		if derr := n.deleteRules(uid); derr != nil {
			err = errors.Join(err, derr)
		}
		return netip.Addr{}, fmt.Errorf("set up network of pod %s: %w", p.FullName(), err)
	}
	st.Step("hostport_sockets")
	if err := n.rebuildLease(uid, netnsPath, log); err != nil {
		return netip.Addr{}, fmt.Errorf("set up network of pod %s: %w", p.FullName(), err)
	}
	ip, err := n.ipam.allocate(uid)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("set up network of pod %s (uid %s): %w", p.FullName(), uid, err)
	}
	st.Step("lease")
	if err := n.ensureVeth(st, uid, ip, netnsPath, log); err != nil {
		return netip.Addr{}, fmt.Errorf("set up network of pod %s: %w", p.FullName(), err)
	}
	if err := n.ensureGuard(uid, ip); err != nil {
		return netip.Addr{}, fmt.Errorf("set up network of pod %s: %w", p.FullName(), err)
	}
	st.Step("guards")
	if err := n.ensureHostPorts(p, uid, ip, log); err != nil {
		return netip.Addr{}, fmt.Errorf("set up network of pod %s: %w", p.FullName(), err)
	}
	st.Step("hostport_rules")
	return ip, nil
}

// rebuildLease gives a pod that has no lease (its file was lost, or is
// unreadable or corrupt) but already has an address on its eth0 (it runs)
// that address back as its lease, so that SetUp never re-addresses a
// running pod. An address another pod's lease holds is not taken.
func (n *Pods) rebuildLease(uid, netnsPath string, log *slog.Logger) error {
	if _, ok, err := n.ipam.lookup(uid); err != nil || ok {
		return err
	}
	a, ok := podAddress(netnsPath, n.cfg.CIDR)
	if !ok {
		return nil // a new pod (or one whose eth0 is gone): allocate
	}
	adopted, err := n.ipam.adopt(uid, a)
	if err != nil {
		return err
	}
	if adopted {
		log.Warn("the pod's lease was missing or unreadable; rebuilt it from the address the pod has", "ip", a.String())
	}
	return nil
}

// podAddress returns the address in cidr of eth0 in the network namespace
// at netnsPath, if it has one.
func podAddress(netnsPath string, cidr netip.Prefix) (netip.Addr, bool) {
	ns, err := netns.GetFromPath(netnsPath)
	if err != nil {
		return netip.Addr{}, false
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return netip.Addr{}, false
	}
	defer h.Close()
	eth0, err := h.LinkByName(podIfName)
	if err != nil {
		return netip.Addr{}, false
	}
	addrs, err := h.AddrList(eth0, netlink.FAMILY_V4)
	if err != nil {
		return netip.Addr{}, false
	}
	for _, a := range addrs {
		if p := ipNetPrefix(a.IPNet); p.IsValid() && p.Bits() == cidr.Bits() && cidr.Contains(p.Addr()) {
			return p.Addr(), true
		}
	}
	return netip.Addr{}, false
}

// ensureVeth makes the pod's veth pair and configures both ends, repairing
// whatever an interrupted earlier call left.
func (n *Pods) ensureVeth(st *steptime.Timer, uid string, ip netip.Addr, netnsPath string, log *slog.Logger) error {
	br, err := netlink.LinkByName(n.cfg.Bridge)
	if err != nil {
		return fmt.Errorf("find bridge %s (has Init run?): %w", n.cfg.Bridge, err)
	}
	ns, err := netns.GetFromPath(netnsPath)
	if err != nil {
		return fmt.Errorf("open network namespace %s: %w", netnsPath, err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("netlink in %s: %w", netnsPath, err)
	}
	defer h.Close()

	name := n.in.vethName(uid)
	host, err := optLink(netlink.LinkByName(name))
	if err != nil {
		return fmt.Errorf("find veth %s: %w", name, err)
	}
	if host != nil && host.Attrs().Alias != "" && host.Attrs().Alias != n.in.alias(uid) {
		return fmt.Errorf("%w: %s has alias %q", ErrNameClash, name, host.Attrs().Alias)
	}
	eth0, err := optLink(h.LinkByName(podIfName))
	if err != nil {
		return fmt.Errorf("find %s in %s: %w", podIfName, netnsPath, err)
	}
	if !paired(host, eth0) {
		if host != nil || eth0 != nil {
			log.Warn("replacing a half-made veth pair", "veth", name, "host_end", host != nil, "pod_end", eth0 != nil)
		}
		if host, eth0, err = n.createVeth(h, br, ns, name, uid, host, eth0); err != nil {
			return err
		}
		log.Info("created the pod's veth", "veth", name, "ip", ip.String())
	}
	st.Step("veth")
	// The host end: alias, bridge, up.
	if host.Attrs().Alias != n.in.alias(uid) {
		if err := netlink.LinkSetAlias(host, n.in.alias(uid)); err != nil {
			return fmt.Errorf("set alias of %s: %w", name, err)
		}
	}
	attached := host.Attrs().MasterIndex == br.Attrs().Index
	if !attached {
		if err := netlink.LinkSetMasterByIndex(host, br.Attrs().Index); err != nil {
			return fmt.Errorf("attach %s to %s: %w", name, n.cfg.Bridge, err)
		}
	}
	if err := n.ensureHairpin(uid, host, attached); err != nil {
		return err
	}
	st.Step("bridge_port")
	if err := disableIPv6(name); err != nil {
		return err
	}
	st.Step("sysctls")
	if host.Attrs().Flags&net.FlagUp == 0 {
		if err := netlink.LinkSetUp(host); err != nil {
			return fmt.Errorf("bring %s up: %w", name, err)
		}
	}
	err = n.configurePodEnd(h, eth0, ip)
	st.Step("addresses")
	return err
}

// ensureHairpin turns on hairpin mode on the pod's bridge port, so that
// a pod reaching its own hostPort through a node address gets its packets
// back: with br_netfilter loaded, the DNAT happens while the frame is
// bridged, and the bridge sends it out of the port it came in on only in
// hairpin mode. Reading the mode back takes a dump of every bridge port,
// so it is set, not checked: whenever the port is (re)attached, and once
// per veth per process lifetime (which covers a crash before it was set).
func (n *Pods) ensureHairpin(uid string, host netlink.Link, attached bool) error {
	n.mu.Lock()
	done := n.hairpin[uid] == host.Attrs().Index
	n.mu.Unlock()
	if done && attached {
		return nil
	}
	if err := netlink.LinkSetHairpin(host, true); err != nil {
		return fmt.Errorf("hairpin mode on %s: %w", host.Attrs().Name, err)
	}
	n.mu.Lock()
	n.hairpin[uid] = host.Attrs().Index
	n.mu.Unlock()
	return nil
}

// createVeth deletes the leftovers of a pair (either end may be nil) and
// creates the pair anew: the host end named name, up, with the pod's alias,
// on the bridge; the other end created directly inside the pod's netns as
// eth0, so that no half-moved state exists.
func (n *Pods) createVeth(h *netlink.Handle, br netlink.Link, ns netns.NsHandle, name, uid string, host, eth0 netlink.Link) (netlink.Link, netlink.Link, error) {
	if host != nil {
		if err := netlink.LinkDel(host); err != nil && !isNotFound(err) {
			return nil, nil, fmt.Errorf("delete stale veth %s: %w", name, err)
		}
	}
	if eth0 != nil {
		if err := h.LinkDel(eth0); err != nil && !isNotFound(err) {
			return nil, nil, fmt.Errorf("delete stale %s in the pod: %w", podIfName, err)
		}
	}
	attrs := netlink.NewLinkAttrs()
	attrs.Name = name
	attrs.MTU = br.Attrs().MTU
	attrs.Flags = net.FlagUp
	veth := &netlink.Veth{LinkAttrs: attrs, PeerName: podIfName, PeerHardwareAddr: podMAC(uid), PeerNamespace: netlink.NsFd(int(ns))}
	if err := netlink.LinkAdd(veth); err != nil {
		return nil, nil, fmt.Errorf("create veth %s: %w", name, err)
	}
	// The kernel takes no alias on creation. Until the next request the
	// veth is found only by its name, through the lease written before it.
	if err := netlink.LinkSetAlias(veth, n.in.alias(uid)); err != nil {
		return nil, nil, fmt.Errorf("set alias of %s: %w", name, err)
	}
	host, err := netlink.LinkByName(name)
	if err != nil {
		return nil, nil, fmt.Errorf("find new veth %s: %w", name, err)
	}
	eth0, err = h.LinkByName(podIfName)
	if err != nil {
		return nil, nil, fmt.Errorf("find new %s in the pod: %w", podIfName, err)
	}
	return host, eth0, nil
}

// paired reports whether host and eth0 are the two ends of one veth pair.
func paired(host, eth0 netlink.Link) bool {
	return host != nil && eth0 != nil && host.Type() == "veth" && eth0.Type() == "veth" &&
		host.Attrs().ParentIndex == eth0.Attrs().Index && eth0.Attrs().ParentIndex == host.Attrs().Index
}

// configurePodEnd gives eth0 exactly the pod's address, brings it and lo
// up, and routes by default via the gateway.
func (n *Pods) configurePodEnd(h *netlink.Handle, eth0 netlink.Link, ip netip.Addr) error {
	want := netip.PrefixFrom(ip, n.cfg.CIDR.Bits())
	addrs, err := h.AddrList(eth0, netlink.FAMILY_V4)
	if err != nil {
		return fmt.Errorf("list addresses of the pod's %s: %w", podIfName, err)
	}
	have := false
	for _, a := range addrs {
		if ipNetPrefix(a.IPNet) == want {
			have = true
			continue
		}
		if err := h.AddrDel(eth0, &a); err != nil && !errors.Is(err, unix.EADDRNOTAVAIL) {
			return fmt.Errorf("remove old address %s from the pod's %s: %w", a.IPNet, podIfName, err)
		}
	}
	if !have {
		if err := h.AddrAdd(eth0, &netlink.Addr{IPNet: prefixIPNet(want)}); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("add address %s to the pod's %s: %w", want, podIfName, err)
		}
	}
	if eth0.Attrs().Flags&net.FlagUp == 0 {
		if err := h.LinkSetUp(eth0); err != nil {
			return fmt.Errorf("bring the pod's %s up: %w", podIfName, err)
		}
	}
	lo, err := h.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("find the pod's lo: %w", err)
	}
	if lo.Attrs().Flags&net.FlagUp == 0 {
		if err := h.LinkSetUp(lo); err != nil {
			return fmt.Errorf("bring the pod's lo up: %w", err)
		}
	}
	routes, err := h.RouteList(eth0, netlink.FAMILY_V4)
	if err != nil {
		return fmt.Errorf("list the pod's routes: %w", err)
	}
	for _, r := range routes {
		if isDefault(r) && r.Gw != nil && r.Gw.Equal(n.gw.AsSlice()) {
			return nil
		}
	}
	err = h.RouteReplace(&netlink.Route{LinkIndex: eth0.Attrs().Index, Gw: n.gw.AsSlice(), Dst: prefixIPNet(netip.MustParsePrefix("0.0.0.0/0"))})
	if err != nil {
		return fmt.Errorf("add the pod's default route via %s: %w", n.gw, err)
	}
	return nil
}

// ensureHostPorts makes the pod's rules in the hostports chain exactly the
// ones its manifest asks for, replacing them in one batch when they differ.
func (n *Pods) ensureHostPorts(p *pod.Pod, uid string, ip netip.Addr, log *slog.Logger) error {
	ports, skipped := hostPorts(p, ip)
	t := natTable(n.in.table())
	want := make([]*nftables.Rule, 0, len(ports))
	for _, hp := range ports {
		want = append(want, hostPortRule(t, uid, hp))
	}
	replaced, changed, err := n.syncPodRules(uid, n.podRules, want, "hostPort rules")
	if err != nil || !changed {
		return err
	}
	if len(skipped) > 0 {
		log.Warn("hostPorts with an IPv6 hostIP are not published: the pod network is IPv4 only", "ports", skipped)
	}
	log.Info("published hostPorts", "ports", len(want), "replaced", replaced)
	return nil
}

// syncPodRules makes the pod's rules that list returns exactly want, in
// one batch, unless they carry the same comments already. It returns how
// many rules it replaced and whether it wrote; what names the rules in
// errors.
func (n *Pods) syncPodRules(uid string, list func(*nftables.Conn, string) ([]*nftables.Rule, error), want []*nftables.Rule, what string) (int, bool, error) {
	n.nftMu.Lock()
	defer n.nftMu.Unlock()
	c, err := nftables.New()
	if err != nil {
		return 0, false, fmt.Errorf("nftables: %w", err)
	}
	have, err := list(c, uid)
	if err != nil {
		return 0, false, err
	}
	if sameComments(have, want) {
		return 0, false, nil
	}
	for _, r := range have {
		if err := c.DelRule(r); err != nil {
			return 0, false, fmt.Errorf("delete old %s: %w", what, err)
		}
	}
	for _, r := range want {
		c.AddRule(r)
	}
	if err := c.Flush(); err != nil {
		return 0, false, fmt.Errorf("write %s: %w", what, err)
	}
	return len(have), true, nil
}

// podRules returns the rules of the hostports chain tagged with uid
// (every pod's when uid is ""), recreating tug's table first if someone
// deleted it. The caller holds n.nftMu.
func (n *Pods) podRules(c *nftables.Conn, uid string) ([]*nftables.Rule, error) {
	t := natTable(n.in.table())
	if _, err := c.ListTableOfFamily(t.Name, nftables.TableFamilyIPv4); err != nil {
		if !errors.Is(err, unix.ENOENT) {
			return nil, fmt.Errorf("find nftables table ip %s: %w", t.Name, err)
		}
		n.log.Warn("nftables table missing; recreating it", "table", n.in.table())
		if err := n.ensureTable(); err != nil {
			return nil, err
		}
	}
	rules, err := c.GetRules(t, chainByName(t, chainHostPorts))
	if err != nil {
		return nil, fmt.Errorf("list rules of chain %s: %w", chainHostPorts, err)
	}
	var mine []*nftables.Rule
	for _, r := range rules {
		if u, ok := uidFromComment(ruleComment(r.UserData)); ok && (uid == "" || u == uid) {
			mine = append(mine, r)
		}
	}
	return mine, nil
}

// TearDown removes the pod's veth pair, its hostPort rules, its port
// guards and its lease.
// Missing pieces are not an error, so it is idempotent. The pod's network
// namespace itself belongs to Namespaces.
func (n *Pods) TearDown(ctx context.Context, uid string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkUID(uid); err != nil {
		return fmt.Errorf("tear down network of pod %s: %w", uid, err)
	}
	var errs []error
	if err := n.deleteVeths(uid); err != nil {
		errs = append(errs, err)
	}
	if err := n.deleteRules(uid); err != nil {
		errs = append(errs, err)
	}
	if err := n.deleteGuard(uid); err != nil {
		errs = append(errs, err)
	}
	if err := n.ipam.release(uid); err != nil {
		errs = append(errs, err)
	}
	n.ports.release(uid)
	n.mu.Lock()
	delete(n.hairpin, uid)
	n.mu.Unlock()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("tear down network of pod %s: %w", uid, err)
	}
	return nil
}

// deleteVeths deletes the pod's host end veth (which takes eth0 with it),
// found by name and, should it have another name, by alias.
func (n *Pods) deleteVeths(uid string) error {
	var errs []error
	del := func(l netlink.Link) {
		if err := netlink.LinkDel(l); err != nil && !isNotFound(err) && !errors.Is(err, unix.ENODEV) {
			errs = append(errs, fmt.Errorf("delete veth %s: %w", l.Attrs().Name, err))
		}
	}
	name := n.in.vethName(uid)
	l, err := optLink(netlink.LinkByName(name))
	if err != nil {
		return fmt.Errorf("find veth %s: %w", name, err)
	}
	if l != nil && (l.Attrs().Alias == n.in.alias(uid) || l.Attrs().Alias == "") {
		del(l)
	}
	links, err := linkList()
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, l := range links {
		if l.Type() == "veth" && l.Attrs().Alias == n.in.alias(uid) && l.Attrs().Name != name {
			del(l)
		}
	}
	return errors.Join(errs...)
}

// deleteRules deletes the pod's hostPort rules in one batch.
func (n *Pods) deleteRules(uid string) error {
	n.nftMu.Lock()
	defer n.nftMu.Unlock()
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	exists, err := tableExists(c, n.in.table())
	if err != nil || !exists {
		return err
	}
	rules, err := n.podRules(c, uid)
	if err != nil || len(rules) == 0 {
		return err
	}
	for _, r := range rules {
		if err := c.DelRule(r); err != nil {
			return fmt.Errorf("delete hostPort rule: %w", err)
		}
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("delete hostPort rules: %w", err)
	}
	return nil
}

// List returns the UIDs, sorted, that own a lease, a veth (by its alias)
// or a hostPort rule (by its comment): everything TearDown removes. The
// caller owns the returned slice.
//
// Blind spot: the kernel sets a link's alias only after creating it, so a
// veth is unaliased for one netlink request. A crash just then leaves a
// veth that only its name (a hash of the UID) ties to the pod; the pod's
// lease, written before the veth and removed after it, is what lists it.
func (n *Pods) List() ([]string, error) {
	uids, err := n.ipam.list()
	if err != nil {
		return nil, err
	}
	links, err := linkList()
	if err != nil {
		return nil, err
	}
	for _, l := range links {
		if uid, ok := n.in.uidFromAlias(l.Attrs().Alias); ok && l.Type() == "veth" {
			uids = append(uids, uid)
		}
	}
	rules, err := n.allPodRules()
	if err != nil {
		return nil, err
	}
	guards, err := n.allGuardRules()
	if err != nil {
		return nil, err
	}
	for _, r := range append(rules, guards...) {
		if uid, ok := uidFromComment(ruleComment(r.UserData)); ok {
			uids = append(uids, uid)
		}
	}
	slices.Sort(uids)
	return slices.Compact(uids), nil
}

// allPodRules returns every pod's hostPort rules; none when tug's table
// does not exist.
func (n *Pods) allPodRules() ([]*nftables.Rule, error) {
	n.nftMu.Lock()
	defer n.nftMu.Unlock()
	c, err := nftables.New()
	if err != nil {
		return nil, fmt.Errorf("nftables: %w", err)
	}
	exists, err := tableExists(c, n.in.table())
	if err != nil || !exists {
		return nil, err
	}
	return n.podRules(c, "")
}

// HostIP returns the node's address for pod status: Config.HostIP if set,
// else the preferred source address of the IPv4 default route with the
// lowest metric, or the zero Addr when there is no default route.
func (n *Pods) HostIP() netip.Addr {
	if n.cfg.HostIP.IsValid() {
		return n.cfg.HostIP
	}
	n.hostIPMu.Lock()
	defer n.hostIPMu.Unlock()
	if now := time.Now(); n.hostIPAt.IsZero() || now.Sub(n.hostIPAt) >= hostIPRefresh {
		n.hostIP, n.hostIPAt = defaultRouteSource(), now
	}
	return n.hostIP
}

// defaultRouteSource returns the preferred source address of the IPv4
// default route with the lowest metric, or the zero Addr.
func defaultRouteSource() netip.Addr {
	routes, err := netlink.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: unix.RT_TABLE_MAIN}, netlink.RT_FILTER_TABLE)
	if err != nil {
		return netip.Addr{}
	}
	var best *netlink.Route
	for i, r := range routes {
		if isDefault(r) && (best == nil || r.Priority < best.Priority) {
			best = &routes[i]
		}
	}
	if best == nil {
		return netip.Addr{}
	}
	if a, ok := netip.AddrFromSlice(best.Src); ok && a.Unmap().IsValid() && !a.IsUnspecified() {
		return a.Unmap()
	}
	// No preferred source on the route: ask the kernel which it would use
	// (a lookup only; nothing is sent).
	dst := best.Gw
	if dst == nil {
		dst = net.IPv4(192, 0, 2, 1) // TEST-NET-1: routed by the default route
	}
	got, err := netlink.RouteGet(dst)
	if err != nil || len(got) == 0 {
		return netip.Addr{}
	}
	a, _ := netip.AddrFromSlice(got[0].Src)
	return a.Unmap()
}

// tableExists reports whether the nftables table ip name exists.
func tableExists(c *nftables.Conn, name string) (bool, error) {
	return tableOfFamilyExists(c, name, nftables.TableFamilyIPv4)
}

// sameComments reports whether two rule lists carry the same comments,
// in any order.
func sameComments(have, want []*nftables.Rule) bool {
	if len(have) != len(want) {
		return false
	}
	a, b := make([]string, len(have)), make([]string, len(want))
	for i := range have {
		a[i], b[i] = ruleComment(have[i].UserData), ruleComment(want[i].UserData)
	}
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// linkList lists the node's links, retrying a dump that links created or
// deleted meanwhile (other pods' SetUp) interrupted.
func linkList() ([]netlink.Link, error) {
	var err error
	for range 10 {
		var links []netlink.Link
		links, err = netlink.LinkList()
		if !errors.Is(err, netlink.ErrDumpInterrupted) {
			if err != nil {
				return nil, fmt.Errorf("list links: %w", err)
			}
			return links, nil
		}
	}
	return nil, fmt.Errorf("list links: %w", err)
}

// optLink turns "link not found" into a nil link.
func optLink(l netlink.Link, err error) (netlink.Link, error) {
	if isNotFound(err) {
		return nil, nil
	}
	return l, err
}

func isNotFound(err error) bool {
	var nf netlink.LinkNotFoundError
	return errors.As(err, &nf)
}

// isDefault reports whether r is a default route.
func isDefault(r netlink.Route) bool {
	if r.Dst == nil {
		return true
	}
	ones, _ := r.Dst.Mask.Size()
	return ones == 0
}

func prefixIPNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

func ipNetPrefix(n *net.IPNet) netip.Prefix {
	if n == nil {
		return netip.Prefix{}
	}
	a, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}
	}
	ones, _ := n.Mask.Size()
	return netip.PrefixFrom(a.Unmap(), ones)
}

// writeSysctl sets /proc/sys/<key> to value unless it has it already. The
// key is resolved in the calling thread's network namespace.
func writeSysctl(key, value string) error {
	path := filepath.Join("/proc/sys", key)
	if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) == value {
		return nil
	}
	if err := os.WriteFile(path, []byte(value), 0o644); err != nil {
		return err
	}
	return nil
}
