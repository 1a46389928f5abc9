//go:build e2e

package e2e

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"tug/internal/testutil"
)

// TestPodNetworkGuards: a pod, whatever capabilities it has in its own
// network namespace (the test acts there as root), can neither rewrite the
// node's IPv6 routing with a Router Advertisement nor take another pod's
// address with a gratuitous ARP or a spoofed IPv4 source: each pod's
// bridge port lets through only IPv4 and ARP from the MAC and address tug
// leased it.
func TestPodNetworkGuards(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	tg.writeManifest("victim.yaml", webPod("victim", tg.image, 0))
	tg.writeManifest("attacker.yaml", shPod("attacker", tg.image, idle))
	tg.waitRunning(startTimeout, "victim", "main", 0)
	tg.waitRunning(startTimeout, "attacker", "main", 0)
	victimIP, attackerIP := tg.podIPOf("victim"), tg.podIPOf("attacker")
	attackerNS := filepath.Join(tg.runDir, "ns", tg.uid("attacker"), "net")
	node := netnsName(tg.netns)
	const bridge = "tug0"

	get := func() error {
		resp, err := httpClientIn(tg.netns, 5*time.Second).Get("http://" + victimIP + "/")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("status %s", resp.Status)
		}
		return nil
	}
	// Running is not listening: the victim's web server answers a moment
	// after its container starts.
	tg.waitFor(startTimeout, "the node reaching the victim's web server", func() (bool, error) {
		err := get()
		return err == nil, err
	})
	neigh := func() string {
		return strings.TrimSpace(run(t, "ip", "-n", node, "neigh", "show", victimIP, "dev", bridge))
	}
	neighBefore := neigh()
	victimMAC := lladdr(neighBefore)
	if victimMAC == "" {
		t.Fatalf("the node has no neighbour entry of the victim: %q", neighBefore)
	}
	routesBefore := run(t, "ip", "-n", node, "-6", "route", "show", "table", "all")
	addrsBefore := run(t, "ip", "-n", node, "addr", "show", "dev", bridge)

	var attackerMAC net.HardwareAddr
	var eth0 int
	if err := testutil.InNetns(attackerNS, func() error {
		ifi, err := net.InterfaceByName("eth0")
		if err != nil {
			return err
		}
		attackerMAC, eth0 = ifi.HardwareAddr, ifi.Index
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	t.Run("router advertisement", func(t *testing.T) {
		// The pod's link-local address is usable once its duplicate
		// address detection is over (a second or two after eth0 is up).
		tg.waitFor(10*time.Second, "the RA sent from the pod", func() (bool, error) {
			err := testutil.InNetns(attackerNS, func() error { return sendRA(eth0, attackerMAC) })
			return err == nil, err
		})
		time.Sleep(2 * time.Second) // the kernel acts on an RA at once
		if after := run(t, "ip", "-n", node, "-6", "route", "show", "table", "all"); after != routesBefore {
			t.Errorf("the node's IPv6 routes changed:\n--- before\n%s--- after\n%s", routesBefore, after)
		}
		if after := run(t, "ip", "-n", node, "addr", "show", "dev", bridge); after != addrsBefore {
			t.Errorf("the bridge's addresses changed:\n--- before\n%s--- after\n%s", addrsBefore, after)
		}
		victimNS := filepath.Join(tg.runDir, "ns", tg.uid("victim"), "net")
		if out, err := exec.Command("nsenter", "--net="+victimNS, "ip", "-6", "route", "show", "table", "all").CombinedOutput(); err != nil || strings.Contains(string(out), "2001:db8:7") || strings.Contains(string(out), "proto ra") {
			t.Errorf("the other pod's IPv6 routes (%v):\n%s", err, out)
		}
	})

	t.Run("gratuitous ARP", func(t *testing.T) {
		victim := netip.MustParseAddr(victimIP)
		if err := testutil.InNetns(attackerNS, func() error { return sendGratuitousARP(eth0, attackerMAC, victim) }); err != nil {
			t.Fatalf("send the ARP from the pod: %v", err)
		}
		time.Sleep(time.Second)
		if after := neigh(); lladdr(after) != victimMAC {
			t.Errorf("the node's neighbour entry of the victim changed: before %q, after %q (attacker %s)", neighBefore, after, attackerMAC)
		}
		if err := get(); err != nil {
			t.Errorf("the node lost its traffic to the victim: %v", err)
		}
	})

	t.Run("spoofed IPv4 source", func(t *testing.T) {
		gw := run(t, "ip", "-n", node, "-4", "-o", "addr", "show", "dev", bridge)
		gwIP := strings.Split(strings.Fields(gw)[3], "/")[0]
		l := listenPacketIn(t, tg.netns, gwIP+":0")
		port := l.LocalAddr().(*net.UDPAddr).Port
		from := map[string]bool{}
		done := make(chan struct{})
		go func() {
			defer close(done)
			buf := make([]byte, 64)
			for {
				l.SetReadDeadline(time.Now().Add(3 * time.Second))
				_, addr, err := l.ReadFrom(buf)
				if err != nil {
					return
				}
				from[addr.(*net.UDPAddr).IP.String()] = true
			}
		}()
		// The attacker takes the victim's address as a second one and sends
		// from it, then once from its own as a control.
		if out, err := exec.Command("nsenter", "--net="+attackerNS, "ip", "addr", "add", victimIP+"/32", "dev", "eth0").CombinedOutput(); err != nil {
			t.Fatalf("add the victim's address in the attacker: %v %s", err, out)
		}
		for _, src := range []string{victimIP, attackerIP} {
			if err := testutil.InNetns(attackerNS, func() error { return sendUDP(src, gwIP, port) }); err != nil {
				t.Fatalf("send from %s: %v", src, err)
			}
		}
		<-done
		if !from[attackerIP] {
			t.Fatalf("the control datagram from the attacker's own address did not arrive (got %v)", from)
		}
		if from[victimIP] {
			t.Errorf("a datagram with the victim's source address reached the node from the attacker's port")
		}
		if err := get(); err != nil {
			t.Errorf("the node lost its traffic to the victim: %v", err)
		}
	})
}

// lladdr returns the link-layer address in a line of `ip neigh show`.
func lladdr(line string) string {
	f := strings.Fields(line)
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "lladdr" {
			return f[i+1]
		}
	}
	return ""
}

// listenPacketIn listens for UDP on addr inside the network namespace at
// path, until the test ends.
func listenPacketIn(t *testing.T, path, addr string) net.PacketConn {
	t.Helper()
	var l net.PacketConn
	if err := testutil.InNetns(path, func() (err error) {
		l, err = net.ListenPacket("udp4", addr)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// sendUDP sends three datagrams from src to dst:port (called inside the
// sender's network namespace).
func sendUDP(src, dst string, port int) error {
	c, err := net.DialUDP("udp4", &net.UDPAddr{IP: net.ParseIP(src)}, &net.UDPAddr{IP: net.ParseIP(dst), Port: port})
	if err != nil {
		return err
	}
	defer c.Close()
	for range 3 {
		if _, err := c.Write([]byte("from " + src)); err != nil {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// sendRA sends an ICMPv6 Router Advertisement to all nodes on the link of
// interface index ifindex: a default router for 30 minutes and the
// autonomous prefix 2001:db8:7::/64, the kind of packet a pod could send to
// install a route and a SLAAC address on the node.
func sendRA(ifindex int, mac net.HardwareAddr) error {
	fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_RAW, unix.IPPROTO_ICMPV6)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_MULTICAST_HOPS, 255); err != nil {
		return err
	}
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_MULTICAST_IF, ifindex); err != nil {
		return err
	}
	ra := []byte{134, 0, 0, 0, 64, 0}             // type, code, checksum (the kernel's), hop limit, flags
	ra = binary.BigEndian.AppendUint16(ra, 1800)  // router lifetime
	ra = append(ra, make([]byte, 8)...)           // reachable, retrans timers
	ra = append(ra, 3, 4, 64, 0xc0)               // prefix information: on-link, autonomous
	ra = binary.BigEndian.AppendUint32(ra, 86400) // valid lifetime
	ra = binary.BigEndian.AppendUint32(ra, 14400) // preferred lifetime
	ra = append(ra, 0, 0, 0, 0)                   // reserved
	ra = append(ra, netip.MustParseAddr("2001:db8:7::").AsSlice()...)
	ra = append(append(ra, 1, 1), mac...) // source link-layer address
	to := &unix.SockaddrInet6{ZoneId: uint32(ifindex)}
	copy(to.Addr[:], netip.MustParseAddr("ff02::1").AsSlice())
	for range 3 {
		if err := unix.Sendto(fd, ra, 0, to); err != nil {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// sendGratuitousARP broadcasts, from interface index ifindex, ARP replies
// and requests saying that ip is at mac.
func sendGratuitousARP(ifindex int, mac net.HardwareAddr, ip netip.Addr) error {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, int(htons(unix.ETH_P_ARP)))
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	bcast := net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	for _, op := range []uint16{2, 1} {
		f := append(append(append([]byte{}, bcast...), mac...), 0x08, 0x06)
		f = append(f, 0, 1, 0x08, 0, 6, 4)
		f = binary.BigEndian.AppendUint16(f, op)
		f = append(append(f, mac...), ip.AsSlice()...)
		f = append(append(f, bcast...), ip.AsSlice()...)
		to := &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ARP), Ifindex: ifindex, Halen: 6}
		copy(to.Addr[:], bcast)
		for range 3 {
			if err := unix.Sendto(fd, f, 0, to); err != nil {
				return err
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
