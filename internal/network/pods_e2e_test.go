//go:build e2e

package network

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/nftables"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"tug/internal/pod"
	"tug/internal/testutil"
)

// podEnd returns the pod's eth0 addresses and default gateway.
func podEnd(t *testing.T, path string) (addrs []string, gw string, up bool) {
	t.Helper()
	ns, err := netns.GetFromPath(path)
	must(t, err)
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	must(t, err)
	defer h.Close()
	eth0, err := h.LinkByName("eth0")
	must(t, err)
	as, err := h.AddrList(eth0, netlink.FAMILY_V4)
	must(t, err)
	for _, a := range as {
		addrs = append(addrs, a.IPNet.String())
	}
	routes, err := h.RouteList(eth0, netlink.FAMILY_V4)
	must(t, err)
	for _, r := range routes {
		if isDefault(r) {
			gw = r.Gw.String()
		}
	}
	lo, err := h.LinkByName("lo")
	must(t, err)
	return addrs, gw, eth0.Attrs().Flags&net.FlagUp != 0 && lo.Attrs().Flags&net.FlagUp != 0
}

func TestSetUpConfiguresThePod(t *testing.T) {
	tn := newTestNet(t, "10.201.0.0/24")
	p, path := tn.pod("uid-a", "8080:80/TCP")
	ip := tn.setUp(tn.pods, p, path)
	if ip.String() != "10.201.0.2" {
		t.Errorf("ip = %s, want 10.201.0.2 (the first after the gateway)", ip)
	}
	addrs, gw, up := podEnd(t, path)
	if !slices.Equal(addrs, []string{"10.201.0.2/24"}) || gw != "10.201.0.1" || !up {
		t.Errorf("pod end: addrs %v, gateway %q, eth0 and lo up %v", addrs, gw, up)
	}
	host, err := netlink.LinkByName(instance("").vethName("uid-a"))
	must(t, err)
	br, err := netlink.LinkByName(tn.cfg.Bridge)
	must(t, err)
	if host.Attrs().MasterIndex != br.Attrs().Index || host.Attrs().Alias != instance("").alias("uid-a") || host.Attrs().Flags&net.FlagUp == 0 {
		t.Errorf("host end %s: master %d (bridge %d), alias %q, flags %v", host.Attrs().Name, host.Attrs().MasterIndex, br.Attrs().Index, host.Attrs().Alias, host.Attrs().Flags)
	}
	if b, err := os.ReadFile(filepath.Join(tn.cfg.StateDir, "leases", "10.201.0.2")); err != nil || string(b) != "uid-a\n" {
		t.Errorf("lease = %q, %v", b, err)
	}
	if b, _ := os.ReadFile("/proc/sys/net/ipv4/ip_forward"); strings.TrimSpace(string(b)) != "1" {
		t.Errorf("ip_forward = %q", b)
	}

	// Again: nothing changes.
	before := tn.state()
	if len(before.rules) != 1 || len(before.veths) != 1 {
		t.Fatalf("after SetUp: %v", before)
	}
	for range 3 {
		if ip2 := tn.setUp(tn.pods, p, path); ip2 != ip {
			t.Errorf("SetUp again = %s, want %s", ip2, ip)
		}
	}
	if after := tn.state(); after.String() != before.String() {
		t.Errorf("SetUp again changed the network:\nbefore %v\nafter  %v", before, after)
	}
	if uids, err := tn.pods.List(); err != nil || !slices.Equal(uids, []string{"uid-a"}) {
		t.Errorf("List = %v, %v", uids, err)
	}
}

func TestPodsReachEachOther(t *testing.T) {
	tn := newTestNet(t, "10.201.0.0/24")
	pa, patha := tn.pod("uid-a")
	pb, pathb := tn.pod("uid-b")
	ipa := tn.setUp(tn.pods, pa, patha)
	ipb := tn.setUp(tn.pods, pb, pathb)
	serve(t, patha, "tcp", ":80")
	serve(t, pathb, "udp", ":53")
	if seen, err := ask(pathb, "tcp", netip.AddrPortFrom(ipa, 80).String()); err != nil || seen != ipb.String() {
		t.Errorf("b -> a tcp: server saw %q, %v; want %s", seen, err, ipb)
	}
	if seen, err := ask(patha, "udp", netip.AddrPortFrom(ipb, 53).String()); err != nil || seen != ipa.String() {
		t.Errorf("a -> b udp: server saw %q, %v; want %s", seen, err, ipa)
	}
	// The node reaches the pods, and the pods their gateway.
	if seen, err := ask("", "tcp", netip.AddrPortFrom(ipa, 80).String()); err != nil || seen != "10.201.0.1" {
		t.Errorf("node -> a: server saw %q, %v", seen, err)
	}
}

func TestRestartKeepsEverything(t *testing.T) {
	tn := newTestNet(t, "10.201.0.0/24")
	ips := map[string]netip.Addr{}
	for _, uid := range []string{"uid-a", "uid-b", "uid-c"} {
		p, path := tn.pod(uid, "9000:80/TCP")
		if uid != "uid-a" {
			p, path = tn.pod(uid)
		}
		ips[uid] = tn.setUp(tn.pods, p, path)
	}
	before := tn.state()
	restarted := tn.restart()
	if after := tn.state(); after.String() != before.String() {
		t.Errorf("Init after a restart changed the network:\nbefore %v\nafter  %v", before, after)
	}
	for _, uid := range []string{"uid-c", "uid-a", "uid-b"} { // another order
		p, path := tn.pod(uid, "9000:80/TCP")
		if uid != "uid-a" {
			p, path = tn.pod(uid)
		}
		if ip := tn.setUp(restarted, p, path); ip != ips[uid] {
			t.Errorf("%s after restart: %s, want %s", uid, ip, ips[uid])
		}
	}
	if after := tn.state(); after.String() != before.String() {
		t.Errorf("SetUp after a restart changed the network:\nbefore %v\nafter  %v", before, after)
	}
	// A new pod after the restart does not take a leased address.
	p, path := tn.pod("uid-d")
	if ip := tn.setUp(restarted, p, path); ip.String() != "10.201.0.5" {
		t.Errorf("new pod after restart: %s, want 10.201.0.5", ip)
	}
}

func TestInitRepairsTheBase(t *testing.T) {
	tn := newTestNet(t, "10.201.0.0/24")
	p, path := tn.pod("uid-a", "8080:80/TCP")
	tn.setUp(tn.pods, p, path)
	// Someone removes the bridge address and the masquerade rules; a
	// pod's rules stay.
	br, err := netlink.LinkByName(tn.cfg.Bridge)
	must(t, err)
	must(t, netlink.AddrDel(br, &netlink.Addr{IPNet: prefixIPNet(netip.MustParsePrefix("10.201.0.1/24"))}))
	c := nftConn(t)
	c.FlushChain(chainByName(natTable(tableName), chainPostrouting))
	must(t, c.Flush())
	tn.restart()
	wantBase := 0
	for _, rules := range baseRules(natTable(tableName), tn.cfg.Bridge, tn.cfg.CIDR) {
		wantBase += len(rules)
	}
	s := tn.state()
	if len(s.base) != wantBase || len(s.rules) != 1 {
		t.Errorf("after Init: %v, want %d base rules and the pod's", s, wantBase)
	}
	addrs, err := netlink.AddrList(br, netlink.FAMILY_V4)
	if err != nil || len(addrs) != 1 || addrs[0].IPNet.String() != "10.201.0.1/24" {
		t.Errorf("bridge addresses = %v, %v", addrs, err)
	}
	// A deleted table is recreated by the next SetUp, rules and all.
	c.DelTable(natTable(tableName))
	must(t, c.Flush())
	tn.setUp(tn.pods, p, path)
	if s := tn.state(); len(s.base) != wantBase || len(s.rules) != 1 {
		t.Errorf("after SetUp with the table gone: %v", s)
	}
}

func TestTearDown(t *testing.T) {
	tn := newTestNet(t, "10.201.0.0/24")
	pa, patha := tn.pod("uid-a", "8080:80/TCP", "8053:53/UDP")
	pb, pathb := tn.pod("uid-b", "8081:80/TCP")
	tn.setUp(tn.pods, pa, patha)
	ipb := tn.setUp(tn.pods, pb, pathb)
	for range 2 {
		if err := tn.pods.TearDown(context.Background(), "uid-a"); err != nil {
			t.Fatal(err)
		}
	}
	s := tn.state()
	if _, ok := s.veths[instance("").vethName("uid-a")]; ok || len(s.veths) != 1 || !slices.Equal(s.leases, []string{ipb.String()}) || len(s.rules) != 1 {
		t.Errorf("after TearDown of a: %v", s)
	}
	if uids, err := tn.pods.List(); err != nil || !slices.Equal(uids, []string{"uid-b"}) {
		t.Errorf("List = %v, %v", uids, err)
	}
	ns, _ := netns.GetFromPath(patha)
	h, _ := netlink.NewHandleAt(ns)
	if _, err := h.LinkByName("eth0"); err == nil {
		t.Error("the pod's eth0 survived TearDown")
	}
	h.Close()
	ns.Close()
	if err := tn.pods.TearDown(context.Background(), "never-existed"); err != nil {
		t.Errorf("TearDown of an unknown pod: %v", err)
	}
}

func TestHostPortsChange(t *testing.T) {
	tn := newTestNet(t, "10.201.0.0/24")
	out := tn.outside()
	p, path := tn.pod("uid-a", "8080:80/TCP")
	ip := tn.setUp(tn.pods, p, path)
	serve(t, path, "tcp", ":80")
	serve(t, path, "tcp", ":81")
	if _, err := ask(out, "tcp", "192.0.2.1:8080"); err != nil {
		t.Fatal(err)
	}
	p, _ = tn.pod("uid-a", "8081:81/TCP")
	tn.setUp(tn.pods, p, path)
	s := tn.state()
	want := fmt.Sprintf("tug pod uid-a tcp *:8081 dnat %s:81", ip)
	if len(s.rules) != 1 || !strings.HasSuffix(s.rules[0], want) {
		t.Errorf("rules = %q, want only %q", s.rules, want)
	}
	if _, err := ask(out, "tcp", "192.0.2.1:8081"); err != nil {
		t.Error(err)
	}
	if _, err := ask(out, "tcp", "192.0.2.1:8080"); err == nil {
		t.Error("old hostPort 8080 still forwarded")
	}
	p, _ = tn.pod("uid-a")
	tn.setUp(tn.pods, p, path)
	if s := tn.state(); len(s.rules) != 0 {
		t.Errorf("rules after removing the hostPorts: %q", s.rules)
	}
}

func TestHostPortDNAT(t *testing.T) {
	tn := newTestNet(t, "10.201.0.0/24")
	out := tn.outside()
	pa, patha := tn.pod("uid-a", "8080:80/TCP", "8053:53/UDP", "192.0.2.1:8090:80/TCP", "198.51.100.7:8091:80/TCP", "127.0.0.1:8092:80/TCP")
	pb, pathb := tn.pod("uid-b")
	ipa := tn.setUp(tn.pods, pa, patha)
	ipb := tn.setUp(tn.pods, pb, pathb)
	serve(t, patha, "tcp", ":80")
	serve(t, patha, "udp", ":53")
	tests := []struct {
		name, from, network, addr string
		want                      string // the source the pod sees; "" for no connection
	}{
		{"outside tcp", out, "tcp", "192.0.2.1:8080", "192.0.2.2"},
		{"outside udp", out, "udp", "192.0.2.1:8053", "192.0.2.2"},
		{"outside to a hostIP port", out, "tcp", "192.0.2.1:8090", "192.0.2.2"},
		{"node itself", "", "tcp", "192.0.2.1:8080", "192.0.2.1"},
		{"node itself via the gateway address", "", "tcp", "10.201.0.1:8080", "10.201.0.1"},
		{"node itself via loopback", "", "tcp", "127.0.0.1:8080", "10.201.0.1"},
		{"node itself via loopback, udp", "", "udp", "127.0.0.1:8053", "10.201.0.1"},
		{"node itself to a loopback hostIP port", "", "tcp", "127.0.0.1:8092", "10.201.0.1"},
		{"a loopback hostIP port is not on the node address", "", "tcp", "192.0.2.1:8092", ""},
		{"a loopback hostIP port is not on the node address from outside", out, "tcp", "192.0.2.1:8092", ""},
		{"hairpin: another pod via the node address", pathb, "tcp", "192.0.2.1:8080", "10.201.0.1"},
		{"hairpin: the pod itself via the node address", patha, "tcp", "192.0.2.1:8080", "10.201.0.1"},
		{"another pod, directly", pathb, "tcp", netip.AddrPortFrom(ipa, 80).String(), ipb.String()},
		{"a hostIP that is not the node's is never reached", out, "tcp", "192.0.2.1:8091", ""},
		{"an unpublished port", out, "tcp", "192.0.2.1:8081", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen, err := ask(tt.from, tt.network, tt.addr)
			switch {
			case tt.want == "" && err == nil:
				t.Errorf("connected (server saw %s); want no connection", seen)
			case tt.want != "" && (err != nil || seen != tt.want):
				t.Errorf("server saw %q, %v; want %s", seen, err, tt.want)
			}
		})
	}
}

func TestMasquerade(t *testing.T) {
	tn := newTestNet(t, "10.201.0.0/24")
	out := tn.outside()
	serve(t, out, "tcp", ":9000")
	serve(t, out, "udp", ":9053")
	p, path := tn.pod("uid-a")
	tn.setUp(tn.pods, p, path)
	for _, network := range []string{"tcp", "udp"} {
		addr := "192.0.2.2:9000"
		if network == "udp" {
			addr = "192.0.2.2:9053"
		}
		if seen, err := ask(path, network, addr); err != nil || seen != "192.0.2.1" {
			t.Errorf("%s: outside server saw %q, %v; want the node's 192.0.2.1", network, seen, err)
		}
	}
	if got := tn.pods.HostIP(); got.String() != "192.0.2.1" {
		t.Errorf("HostIP = %s, want the default route's source 192.0.2.1", got)
	}
	cfg := tn.cfg
	cfg.HostIP = netip.MustParseAddr("203.0.113.9")
	p2, err := New(cfg)
	must(t, err)
	if got := p2.HostIP(); got != cfg.HostIP {
		t.Errorf("HostIP with Config.HostIP = %s", got)
	}
}

func TestCrashLeftovers(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		// leave makes a leftover of uid-x; the pod uid-y is set up too and
		// must survive.
		leave func(t *testing.T, tn *testNet)
	}{
		{"lease without veth", func(t *testing.T, tn *testNet) {
			if _, err := tn.pods.ipam.allocate("uid-x"); err != nil {
				t.Fatal(err)
			}
		}},
		{"veth without lease", func(t *testing.T, tn *testNet) {
			p, path := tn.pod("uid-x")
			ip := tn.setUp(tn.pods, p, path)
			must(t, os.Remove(filepath.Join(tn.cfg.StateDir, "leases", ip.String())))
			tn.pods = tn.restart() // the in-memory leases are gone too
		}},
		{"rule only", func(t *testing.T, tn *testNet) {
			p, path := tn.pod("uid-x", "7000:70/TCP")
			ip := tn.setUp(tn.pods, p, path)
			l, _ := netlink.LinkByName(instance("").vethName("uid-x"))
			must(t, netlink.LinkDel(l))
			must(t, os.Remove(filepath.Join(tn.cfg.StateDir, "leases", ip.String())))
			tn.pods = tn.restart()
		}},
		{"veth whose pod end is still in the node", func(t *testing.T, tn *testNet) {
			attrs := netlink.NewLinkAttrs()
			attrs.Name = instance("").vethName("uid-x")
			veth := &netlink.Veth{LinkAttrs: attrs, PeerName: "tugtmp0"}
			must(t, netlink.LinkAdd(veth))
			must(t, netlink.LinkSetAlias(veth, instance("").alias("uid-x")))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tn := newTestNet(t, "10.201.0.0/24")
			py, pathy := tn.pod("uid-y", "7001:70/TCP")
			ipy := tn.setUp(tn.pods, py, pathy)
			tt.leave(t, tn)
			uids, err := tn.pods.List()
			if err != nil || !slices.Equal(uids, []string{"uid-x", "uid-y"}) {
				t.Fatalf("List = %v, %v; want the leftover uid-x and uid-y", uids, err)
			}
			if err := tn.pods.TearDown(ctx, "uid-x"); err != nil {
				t.Fatal(err)
			}
			if uids, err := tn.pods.List(); err != nil || !slices.Equal(uids, []string{"uid-y"}) {
				t.Errorf("List after TearDown = %v, %v", uids, err)
			}
			s := tn.state()
			if len(s.veths) != 1 || !slices.Equal(s.leases, []string{ipy.String()}) || len(s.rules) != 1 {
				t.Errorf("after TearDown: %v", s)
			}
			if _, err := netlink.LinkByName("tugtmp0"); err == nil {
				t.Error("the stray pod end survived")
			}
		})
	}
}

func TestSetUpResumesHalfDoneState(t *testing.T) {
	tests := []struct {
		name   string
		break_ func(t *testing.T, tn *testNet, path string)
	}{
		{"lease written, no veth", func(t *testing.T, tn *testNet, path string) {
			l, _ := netlink.LinkByName(instance("").vethName("uid-a"))
			must(t, netlink.LinkDel(l))
		}},
		{"veth created, pod end still in the node", func(t *testing.T, tn *testNet, path string) {
			l, _ := netlink.LinkByName(instance("").vethName("uid-a"))
			must(t, netlink.LinkDel(l))
			attrs := netlink.NewLinkAttrs()
			attrs.Name = instance("").vethName("uid-a") // and no alias yet
			must(t, netlink.LinkAdd(&netlink.Veth{LinkAttrs: attrs, PeerName: "tugtmp0"}))
		}},
		{"veth not on the bridge, down, no alias", func(t *testing.T, tn *testNet, path string) {
			l, _ := netlink.LinkByName(instance("").vethName("uid-a"))
			must(t, netlink.LinkSetNoMaster(l))
			must(t, netlink.LinkSetDown(l))
			must(t, netlink.LinkSetAlias(l, ""))
		}},
		{"pod end down, without address and route", func(t *testing.T, tn *testNet, path string) {
			ns, _ := netns.GetFromPath(path)
			defer ns.Close()
			h, _ := netlink.NewHandleAt(ns)
			defer h.Close()
			eth0, _ := h.LinkByName("eth0")
			must(t, h.AddrDel(eth0, &netlink.Addr{IPNet: prefixIPNet(netip.MustParsePrefix("10.201.0.2/24"))}))
			must(t, h.AddrAdd(eth0, &netlink.Addr{IPNet: prefixIPNet(netip.MustParsePrefix("10.201.0.99/24"))}))
			must(t, h.LinkSetDown(eth0))
		}},
		{"pod end deleted", func(t *testing.T, tn *testNet, path string) {
			// Deleting one end deletes both; then a stray eth0 appears in the pod.
			l, _ := netlink.LinkByName(instance("").vethName("uid-a"))
			must(t, netlink.LinkDel(l))
			ns, _ := netns.GetFromPath(path)
			defer ns.Close()
			h, _ := netlink.NewHandleAt(ns)
			defer h.Close()
			attrs := netlink.NewLinkAttrs()
			attrs.Name = "eth0"
			must(t, h.LinkAdd(&netlink.Veth{LinkAttrs: attrs, PeerName: "stray"}))
		}},
		{"rules gone", func(t *testing.T, tn *testNet, path string) {
			c := nftConn(t)
			c.FlushChain(chainByName(natTable(tableName), chainHostPorts))
			must(t, c.Flush())
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tn := newTestNet(t, "10.201.0.0/24")
			out := tn.outside()
			p, path := tn.pod("uid-a", "8080:80/TCP")
			ip := tn.setUp(tn.pods, p, path)
			tt.break_(t, tn, path)
			if ip2 := tn.setUp(tn.pods, p, path); ip2 != ip {
				t.Errorf("SetUp = %s, want %s", ip2, ip)
			}
			addrs, gw, up := podEnd(t, path)
			if !slices.Equal(addrs, []string{"10.201.0.2/24"}) || gw != "10.201.0.1" || !up {
				t.Errorf("pod end: addrs %v, gateway %q, up %v", addrs, gw, up)
			}
			serve(t, path, "tcp", ":80")
			if seen, err := ask(out, "tcp", "192.0.2.1:8080"); err != nil || seen != "192.0.2.2" {
				t.Errorf("hostPort after repair: %q, %v", seen, err)
			}
			if s := tn.state(); len(s.veths) != 1 || len(s.rules) != 1 || len(s.leases) != 1 {
				t.Errorf("after repair: %v", s)
			}
			if _, err := netlink.LinkByName("tugtmp0"); err == nil {
				t.Error("the stray pod end survived")
			}
		})
	}
}

func TestExhaustion(t *testing.T) {
	tn := newTestNet(t, "10.201.0.0/29")
	var paths []string
	var ips []netip.Addr
	for i := range 5 {
		p, path := tn.pod(fmt.Sprintf("uid-%d", i))
		ips = append(ips, tn.setUp(tn.pods, p, path))
		paths = append(paths, path)
	}
	for _, uid := range []string{"uid-5", "uid-6"} {
		p, path := tn.pod(uid)
		_, err := tn.pods.SetUp(context.Background(), p, path)
		if !errors.Is(err, ErrNoAddress) || !strings.Contains(err.Error(), "10.201.0.0/29") || !strings.Contains(err.Error(), "p-"+uid) {
			t.Errorf("SetUp of %s in a full /29 = %v; want ErrNoAddress naming the pod and the CIDR", uid, err)
		}
	}
	if s := tn.state(); len(s.veths) != 5 || len(s.leases) != 5 {
		t.Errorf("a failed SetUp left something: %v", s)
	}
	serve(t, paths[0], "tcp", ":80")
	if _, err := ask(paths[4], "tcp", netip.AddrPortFrom(ips[0], 80).String()); err != nil {
		t.Errorf("pods stopped working: %v", err)
	}
	must(t, tn.pods.TearDown(context.Background(), "uid-2"))
	p, path := tn.pod("uid-5")
	if ip := tn.setUp(tn.pods, p, path); ip != ips[2] {
		t.Errorf("after a release: %s, want the freed %s", ip, ips[2])
	}
}

// TestCycles runs SetUp and TearDown 200 times, on four pods at once, and
// checks that nothing is left and no two pods ever held one address.
func TestCycles(t *testing.T) {
	tn := newTestNet(t, "10.201.0.0/24")
	// One pod set up and torn down first, so the node (bridge, base rules)
	// is prepared before the count.
	first, firstPath := tn.pod("uid-first")
	tn.setUp(tn.pods, first, firstPath)
	must(t, tn.pods.TearDown(context.Background(), "uid-first"))
	before := tn.state()
	const workers, cycles = 4, 50
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		uid := fmt.Sprintf("uid-%d", w)
		p, path := tn.pod(uid, fmt.Sprintf("%d:80/TCP", 8000+w))
		wg.Go(func() {
			for range cycles {
				if _, err := tn.pods.SetUp(context.Background(), p, path); err != nil {
					errs <- err
					return
				}
				if err := tn.pods.TearDown(context.Background(), uid); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	after := tn.state()
	if len(after.veths) != 0 || len(after.leases) != 0 || len(after.rules) != 0 || after.String() != before.String() {
		t.Errorf("after %d cycles:\nbefore %v\nafter  %v", workers*cycles, before, after)
	}
	if uids, err := tn.pods.List(); err != nil || len(uids) != 0 {
		t.Errorf("List = %v, %v", uids, err)
	}
}

func TestConcurrentSetUpGivesDistinctAddresses(t *testing.T) {
	tn := newTestNet(t, "10.201.0.0/24")
	const n = 20
	type result struct {
		uid string
		ip  netip.Addr
		err error
	}
	results := make(chan result, n)
	var wg sync.WaitGroup
	for i := range n {
		uid := fmt.Sprintf("uid-%d", i)
		p, path := tn.pod(uid, fmt.Sprintf("%d:80/TCP", 8000+i))
		wg.Go(func() {
			ip, err := tn.pods.SetUp(context.Background(), p, path)
			results <- result{uid, ip, err}
		})
	}
	wg.Wait()
	close(results)
	seen := map[netip.Addr]string{}
	for r := range results {
		if r.err != nil {
			t.Errorf("%s: %v", r.uid, r.err)
			continue
		}
		if other, dup := seen[r.ip]; dup {
			t.Errorf("%s and %s both got %s", other, r.uid, r.ip)
		}
		seen[r.ip] = r.uid
	}
	if s := tn.state(); len(s.veths) != n || len(s.rules) != n || len(s.leases) != n {
		t.Errorf("after %d concurrent SetUps: %v", n, s)
	}
}

// TestInitLeavesUnusedNodeAlone: a node whose pods are all hostNetwork gets
// no bridge, no forwarding change and no table until a pod needs them.
func TestInitLeavesUnusedNodeAlone(t *testing.T) {
	tn := newTestNet(t, "10.202.0.0/24")
	if _, err := netlink.LinkByName(tn.cfg.Bridge); err == nil {
		t.Errorf("Init created bridge %s with no pod to use it", tn.cfg.Bridge)
	}
	host, hostPath := tn.pod("uid-host")
	host.Spec.HostNetwork = true
	tn.setUp(tn.pods, host, hostPath)
	if _, err := netlink.LinkByName(tn.cfg.Bridge); err == nil {
		t.Errorf("a hostNetwork pod made bridge %s", tn.cfg.Bridge)
	}
	p, path := tn.pod("uid-1")
	tn.setUp(tn.pods, p, path)
	if _, err := netlink.LinkByName(tn.cfg.Bridge); err != nil {
		t.Errorf("the first pod's SetUp left no bridge: %v", err)
	}
	// After a restart with a lease on disk, Init prepares the node at once.
	must(t, netlink.LinkDel(mustLink(t, tn.cfg.Bridge)))
	tn.pods = tn.restart()
	if _, err := netlink.LinkByName(tn.cfg.Bridge); err != nil {
		t.Errorf("Init with a lease on disk did not recreate the bridge: %v", err)
	}
}

func mustLink(t *testing.T, name string) netlink.Link {
	t.Helper()
	l, err := netlink.LinkByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestHostPortIsHeld: a published hostPort is held by a socket, so a
// second pod or a program on the node cannot have it too, and a port a
// program listens on already is refused instead of taken over.
func TestHostPortIsHeld(t *testing.T) {
	tn := newTestNet(t, "10.201.0.0/24")
	ctx := context.Background()
	pa, patha := tn.pod("uid-a", "8088:80/TCP", "8053:53/UDP")
	tn.setUp(tn.pods, pa, patha)
	inUse := func(err error) bool {
		var e *pod.HostPortInUseError
		return errors.As(err, &e)
	}

	// The ports are held: a program cannot bind them.
	if l, err := net.Listen("tcp4", ":8088"); err == nil {
		l.Close()
		t.Error("a program could listen on the pod's hostPort 8088/TCP")
	}
	if c, err := net.ListenPacket("udp4", ":8053"); err == nil {
		c.Close()
		t.Error("a program could bind the pod's hostPort 8053/UDP")
	}

	// A second pod with the same hostPort is refused, and has no rule.
	pb, pathb := tn.pod("uid-b", "8088:80/TCP")
	if _, err := tn.pods.SetUp(ctx, pb, pathb); !inUse(err) || !strings.Contains(err.Error(), "hostPort 8088/TCP is in use") {
		t.Fatalf("second pod with hostPort 8088: %v, want hostPort 8088/TCP is in use", err)
	}
	for _, r := range tn.state().rules {
		if strings.Contains(r, "uid-b") {
			t.Errorf("refused pod has a rule: %s", r)
		}
	}
	// It gets the port once the first pod is gone.
	must(t, tn.pods.TearDown(ctx, "uid-a"))
	tn.setUp(tn.pods, pb, pathb)

	// A port a program on the node listens on is refused.
	l, err := net.Listen("tcp4", ":2222")
	must(t, err)
	defer l.Close()
	pc, pathc := tn.pod("uid-c", "2222:22/TCP")
	if _, err := tn.pods.SetUp(ctx, pc, pathc); !inUse(err) {
		t.Fatalf("pod with hostPort 2222 a program listens on: %v, want in use", err)
	}

	// After a restart the running pod's port is held again before any sync.
	tn.restart()
	if l, err := net.Listen("tcp4", ":8088"); err == nil {
		l.Close()
		t.Error("after a restart, a program could listen on the pod's hostPort 8088/TCP")
	}
	// A program that takes the port while tug is down keeps it: the pod's
	// rule goes, and its next SetUp says the port is in use.
	tn.pods.Close()
	taken, err := net.Listen("tcp4", ":8088")
	must(t, err)
	defer taken.Close()
	tn.restart()
	for _, r := range tn.state().rules {
		if strings.Contains(r, "uid-b") {
			t.Errorf("a port a program took while tug was down is still forwarded: %s", r)
		}
	}
	if _, err := tn.pods.SetUp(ctx, pb, pathb); !inUse(err) {
		t.Errorf("SetUp of the pod whose port was taken: %v, want in use", err)
	}
}

// TestLostLeaseKeepsTheAddress: a running pod whose lease file was lost or
// is corrupt keeps its address after a restart; its lease is rebuilt from
// the address its eth0 has.
func TestLostLeaseKeepsTheAddress(t *testing.T) {
	tests := []struct {
		name  string
		spoil func(path string) error
	}{
		{"corrupt", func(path string) error { return os.WriteFile(path, []byte("\x00\xffnot a uid\n"), 0o600) }},
		{"empty", func(path string) error { return os.WriteFile(path, nil, 0o600) }},
		{"lost", os.Remove},
		{"unreadable", func(path string) error { os.Remove(path); return os.Mkdir(path, 0o700) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tn := newTestNet(t, "10.201.0.0/24")
			// Another pod first, so that a new allocation would not give the
			// same address by chance.
			po, patho := tn.pod("uid-o")
			tn.setUp(tn.pods, po, patho)
			p, path := tn.pod("uid-a")
			ip := tn.setUp(tn.pods, p, path)
			must(t, tt.spoil(filepath.Join(tn.cfg.StateDir, "leases", ip.String())))

			restarted := tn.restart()
			if got := tn.setUp(restarted, p, path); got != ip {
				t.Fatalf("after the lease was %s: %s, want the pod's address %s kept", tt.name, got, ip)
			}
			if addrs, _, _ := podEnd(t, path); !slices.Equal(addrs, []string{ip.String() + "/24"}) {
				t.Errorf("the pod's eth0 has %v, want only %s/24", addrs, ip)
			}
			b, err := os.ReadFile(filepath.Join(tn.cfg.StateDir, "leases", ip.String()))
			if err != nil || strings.TrimSpace(string(b)) != "uid-a" {
				t.Errorf("rebuilt lease: %q, %v; want uid-a", b, err)
			}
			// A new pod does not get that address.
			pn, pathn := tn.pod("uid-n")
			if got := tn.setUp(restarted, pn, pathn); got == ip {
				t.Errorf("a new pod got the running pod's address %s", got)
			}
		})
	}
}

// TestForwardFilter: when tug turns IPv4 forwarding on, the node routes
// the pods' traffic and nothing else; when forwarding was on already, tug
// leaves what is routed alone.
func TestForwardFilter(t *testing.T) {
	for _, wasOn := range []bool{false, true} {
		t.Run(fmt.Sprintf("forwarding on before: %v", wasOn), func(t *testing.T) {
			requireTestNetns(t)
			old := map[bool]string{false: "0", true: "1"}[wasOn]
			must(t, os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte(old), 0o644))
			tn := newTestNet(t, "10.201.0.0/24")
			out := tn.outside()
			// A second network beyond the node, 198.51.100.0/24, that the
			// outside namespace reaches through the node (routing).
			far := tn.network("tugfar0", "198.51.100.1/24", "198.51.100.2/24")
			must(t, testutil.InNetns(out, func() error {
				return netlink.RouteReplace(&netlink.Route{Dst: prefixIPNet(netip.MustParsePrefix("198.51.100.0/24")), Gw: net.IPv4(192, 0, 2, 1)})
			}))
			serve(t, far, "tcp", ":9000")
			serve(t, out, "tcp", ":9000")
			p, path := tn.pod("uid-a", "8080:9000/TCP")
			tn.setUp(tn.pods, p, path)
			serve(t, path, "tcp", ":9000")

			if b, _ := os.ReadFile("/proc/sys/net/ipv4/ip_forward"); strings.TrimSpace(string(b)) != "1" {
				t.Fatalf("ip_forward = %q after SetUp, want 1", b)
			}
			// Pod traffic is routed either way: out (masquerade), in (hostPort).
			if _, err := ask(path, "tcp", "192.0.2.2:9000"); err != nil {
				t.Errorf("pod to the outside: %v", err)
			}
			if _, err := ask(out, "tcp", "192.0.2.1:8080"); err != nil {
				t.Errorf("outside to the pod's hostPort: %v", err)
			}
			// Traffic between two other networks through the node.
			_, err := ask(out, "tcp", "198.51.100.2:9000")
			if wasOn && err != nil {
				t.Errorf("forwarding was on before tug: routing between other networks broke: %v", err)
			}
			if !wasOn && err == nil {
				t.Error("tug turned forwarding on, yet it routes traffic that is not the pods'")
			}
			chains, err := nftConn(t).ListChainsOfTableFamily(nftables.TableFamilyIPv4)
			must(t, err)
			hasForward := slices.ContainsFunc(chains, func(c *nftables.Chain) bool { return c.Table.Name == tableName && c.Name == chainForward })
			if hasForward == wasOn {
				t.Errorf("forward chain in tug's table: %v, want %v", hasForward, !wasOn)
			}
			// After a restart (ip_forward is 1 now), tug still knows it was
			// the one that turned it on.
			tn.restart()
			if _, err := ask(out, "tcp", "198.51.100.2:9000"); !wasOn && err == nil {
				t.Error("after a restart, traffic that is not the pods' is routed")
			}
		})
	}
}

// network makes a namespace behind a veth pair: nodeName (node end, with
// nodeAddr) and eth0 in the new namespace (peerAddr), whose default route
// goes through the node. It returns the namespace's path.
func (tn *testNet) network(nodeName, nodeAddr, peerAddr string) string {
	tn.t.Helper()
	_, path := tn.pod("net-" + nodeName)
	ns, err := netns.GetFromPath(path)
	must(tn.t, err)
	defer ns.Close()
	attrs := netlink.NewLinkAttrs()
	attrs.Name = nodeName
	must(tn.t, netlink.LinkAdd(&netlink.Veth{LinkAttrs: attrs, PeerName: "eth0", PeerNamespace: netlink.NsFd(int(ns))}))
	node, err := netlink.LinkByName(nodeName)
	must(tn.t, err)
	must(tn.t, netlink.AddrAdd(node, &netlink.Addr{IPNet: prefixIPNet(netip.MustParsePrefix(nodeAddr))}))
	must(tn.t, netlink.LinkSetUp(node))
	h, err := netlink.NewHandleAt(ns)
	must(tn.t, err)
	defer h.Close()
	peer, err := h.LinkByName("eth0")
	must(tn.t, err)
	lo, _ := h.LinkByName("lo")
	must(tn.t, h.AddrAdd(peer, &netlink.Addr{IPNet: prefixIPNet(netip.MustParsePrefix(peerAddr))}))
	must(tn.t, h.LinkSetUp(peer))
	must(tn.t, h.LinkSetUp(lo))
	gw := netip.MustParsePrefix(nodeAddr).Addr()
	must(tn.t, h.RouteReplace(&netlink.Route{LinkIndex: peer.Attrs().Index, Gw: gw.AsSlice(), Dst: prefixIPNet(netip.MustParsePrefix("0.0.0.0/0"))}))
	return path
}
