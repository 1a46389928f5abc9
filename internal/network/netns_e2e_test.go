//go:build e2e

package network

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"tug/internal/pod"
	"tug/internal/testutil"
)

// envInNetns marks the copy of the test binary that TestMain started in a
// network namespace of its own.
const envInNetns = "TUG_NETWORK_TEST_NETNS"

// TestMain re-runs the test binary, as root, in a new network namespace
// (all its threads), so that the bridge, veths, nftables table and
// sysctls the tests create never touch the host's. The child dies with the
// parent. Without root the tests run here and skip (fail in CI) through
// testutil.RequireRoot.
func TestMain(m *testing.M) {
	if os.Geteuid() != 0 || os.Getenv(envInNetns) == "1" {
		if os.Getenv(envInNetns) == "1" {
			if lo, err := netlink.LinkByName("lo"); err == nil {
				netlink.LinkSetUp(lo)
			}
		}
		os.Exit(m.Run())
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "network test:", err)
		os.Exit(1)
	}
	cmd := exec.Command(self, os.Args[1:]...)
	cmd.Env = append(os.Environ(), envInNetns+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL}
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		os.Exit(exit.ExitCode())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "network test: run in a new network namespace:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// requireTestNetns skips (fails in CI) without root and fails the test
// unless it runs in the private network namespace TestMain made: a test
// that builds bridges and rules must never run in the host's.
func requireTestNetns(t *testing.T) {
	t.Helper()
	testutil.RequireRoot(t)
	if os.Getenv(envInNetns) != "1" {
		t.Fatal("not in the test's own network namespace; refusing to touch the host's network")
	}
}

// testNet is a Pods in the test's network namespace plus the pod
// namespaces it made; Cleanup removes the bridge, the table and every veth.
type testNet struct {
	t     *testing.T
	pods  *Pods
	cfg   Config
	ns    *Namespaces
	paths map[string]string // uid -> pinned netns
}

func newTestNet(t *testing.T, cidr string, opts ...func(*Config)) *testNet {
	t.Helper()
	requireTestNetns(t)
	cfg := Config{Bridge: "tugtest0", CIDR: netip.MustParsePrefix(cidr), StateDir: t.TempDir(), Log: testutil.Logger(t)}
	for _, o := range opts {
		o(&cfg)
	}
	tn := &testNet{t: t, cfg: cfg, ns: NewNamespaces(t.TempDir(), testutil.Logger(t)), paths: map[string]string{}}
	tn.pods = tn.restart()
	t.Cleanup(func() {
		tn.pods.Close()
		for uid := range tn.paths {
			tn.ns.RemoveNamespaces(context.Background(), uid)
		}
		if links, err := netlink.LinkList(); err == nil {
			for _, l := range links {
				if l.Type() == "veth" || l.Attrs().Name == cfg.Bridge {
					netlink.LinkDel(l)
				}
			}
		}
		if c, err := nftables.New(); err == nil {
			c.DelTable(natTable(instance(cfg.Instance).table()))
			c.DelTable(guardTable(instance(cfg.Instance).table()))
			c.Flush()
		}
	})
	return tn
}

// restart returns a new, initialised Pods on the same state dir, as a tug
// restart makes.
func (tn *testNet) restart() *Pods {
	tn.t.Helper()
	if tn.pods != nil {
		tn.pods.Close() // tug exits: its hostPort sockets close
	}
	p, err := New(tn.cfg)
	if err != nil {
		tn.t.Fatal(err)
	}
	if err := p.Init(context.Background()); err != nil {
		tn.t.Fatal(err)
	}
	tn.pods = p
	return p
}

// pod returns a pod with the given UID and hostPorts ("8080:80/TCP",
// "192.0.2.1:53:5353/UDP") and pins its namespaces.
func (tn *testNet) pod(uid string, ports ...string) (*pod.Pod, string) {
	tn.t.Helper()
	p := &pod.Pod{Metadata: pod.ObjectMeta{Name: "p-" + uid, Namespace: "default", UID: uid}}
	c := pod.Container{Name: "c"}
	for _, s := range ports {
		var cp pod.ContainerPort
		spec, proto, _ := strings.Cut(s, "/")
		cp.Protocol = pod.Protocol(proto)
		parts := strings.Split(spec, ":")
		if len(parts) == 3 {
			cp.HostIP, parts = parts[0], parts[1:]
		}
		fmt.Sscan(parts[0], &cp.HostPort)
		fmt.Sscan(parts[1], &cp.ContainerPort)
		c.Ports = append(c.Ports, cp)
	}
	p.Spec.Containers = []pod.Container{c}
	if path, ok := tn.paths[uid]; ok {
		return p, path
	}
	ns, err := tn.ns.EnsureNamespaces(context.Background(), p)
	if err != nil {
		tn.t.Fatal(err)
	}
	tn.paths[uid] = ns.Net
	return p, ns.Net
}

// setUp is pods.SetUp that fails the test on error.
func (tn *testNet) setUp(p *Pods, pd *pod.Pod, path string) netip.Addr {
	tn.t.Helper()
	ip, err := p.SetUp(context.Background(), pd, path)
	if err != nil {
		tn.t.Fatal(err)
	}
	return ip
}

// serve listens on addr (network "tcp" or "udp") inside the namespace at
// path ("" for the test's own) and answers every connection or datagram
// with the remote address it saw.
func serve(t *testing.T, path, network, addr string) {
	t.Helper()
	listen := func() error {
		switch network {
		case "tcp":
			ln, err := net.Listen("tcp4", addr)
			if err != nil {
				return err
			}
			t.Cleanup(func() { ln.Close() })
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					fmt.Fprintln(c, c.RemoteAddr())
					c.Close()
				}
			}()
		case "udp":
			pc, err := net.ListenPacket("udp4", addr)
			if err != nil {
				return err
			}
			t.Cleanup(func() { pc.Close() })
			go func() {
				buf := make([]byte, 64)
				for {
					_, from, err := pc.ReadFrom(buf)
					if err != nil {
						return
					}
					pc.WriteTo([]byte(from.String()+"\n"), from)
				}
			}()
		}
		return nil
	}
	var err error
	if path == "" {
		err = listen()
	} else {
		err = testutil.InNetns(path, listen)
	}
	if err != nil {
		t.Fatalf("listen on %s %s in %q: %v", network, addr, path, err)
	}
}

// ask connects from the namespace at path ("" for the test's own) to addr
// and returns the remote address the server reports having seen.
func ask(path, network, addr string) (string, error) {
	var c net.Conn
	dial := func() error {
		var err error
		c, err = net.DialTimeout(network+"4", addr, 2*time.Second)
		return err
	}
	var err error
	if path == "" {
		err = dial()
	} else {
		err = testutil.InNetns(path, dial)
	}
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if network == "udp" {
		if _, err := c.Write([]byte("hi")); err != nil {
			return "", err
		}
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("read from %s: %w", addr, err)
	}
	host, _, _ := net.SplitHostPort(strings.TrimSpace(line))
	return host, nil
}

// outside makes a namespace standing for the network beyond the node: a
// veth pair "tugout0" (node end, 192.0.2.1/24) and the other end in the
// new namespace (192.0.2.2/24), with the node's default route through it.
// It returns the path of the outside namespace.
func (tn *testNet) outside() string {
	tn.t.Helper()
	_, path := tn.pod("outside")
	ns, err := netns.GetFromPath(path)
	if err != nil {
		tn.t.Fatal(err)
	}
	defer ns.Close()
	attrs := netlink.NewLinkAttrs()
	attrs.Name = "tugout0"
	if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: attrs, PeerName: "eth0", PeerNamespace: netlink.NsFd(int(ns))}); err != nil {
		tn.t.Fatal(err)
	}
	node, _ := netlink.LinkByName("tugout0")
	must(tn.t, netlink.AddrAdd(node, &netlink.Addr{IPNet: prefixIPNet(netip.MustParsePrefix("192.0.2.1/24"))}))
	must(tn.t, netlink.LinkSetUp(node))
	must(tn.t, netlink.RouteReplace(&netlink.Route{LinkIndex: node.Attrs().Index, Gw: net.IPv4(192, 0, 2, 2)}))
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		tn.t.Fatal(err)
	}
	defer h.Close()
	peer, _ := h.LinkByName("eth0")
	lo, _ := h.LinkByName("lo")
	must(tn.t, h.AddrAdd(peer, &netlink.Addr{IPNet: prefixIPNet(netip.MustParsePrefix("192.0.2.2/24"))}))
	must(tn.t, h.LinkSetUp(peer))
	must(tn.t, h.LinkSetUp(lo))
	return path
}

// nftConn returns an nftables connection in the test's namespace.
func nftConn(t *testing.T) *nftables.Conn {
	t.Helper()
	c, err := nftables.New()
	must(t, err)
	return c
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// state is what the network holds, for before/after comparisons.
type state struct {
	veths  map[string]int // name -> ifindex
	leases []string       // lease file names
	rules  []string       // comments of the hostports chain
	base   []uint64       // handles of the base chains' rules
}

func (tn *testNet) state() state {
	tn.t.Helper()
	s := state{veths: map[string]int{}}
	links, err := netlink.LinkList()
	must(tn.t, err)
	for _, l := range links {
		if l.Type() == "veth" && strings.HasPrefix(l.Attrs().Name, vethPrefix) {
			s.veths[l.Attrs().Name] = l.Attrs().Index
		}
	}
	entries, _ := os.ReadDir(filepath.Join(tn.cfg.StateDir, "leases"))
	for _, e := range entries {
		s.leases = append(s.leases, e.Name())
	}
	c, err := nftables.New()
	must(tn.t, err)
	t := natTable(instance(tn.cfg.Instance).table())
	rules, err := c.GetRules(t, chainByName(t, chainHostPorts))
	must(tn.t, err)
	for _, r := range rules {
		s.rules = append(s.rules, fmt.Sprintf("%d %s", r.Handle, ruleComment(r.UserData)))
	}
	for _, name := range baseChains {
		rules, err := c.GetRules(t, chainByName(t, name))
		must(tn.t, err)
		for _, r := range rules {
			s.base = append(s.base, r.Handle)
		}
	}
	return s
}

func (s state) String() string {
	return fmt.Sprintf("veths %v, leases %v, rules %q, base rules %v", s.veths, s.leases, s.rules, s.base)
}
