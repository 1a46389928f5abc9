//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// podGateway is the bridge's address in the default pod range
// (10.87.0.0/24): the pods' gateway, and the source a pod sees for
// connections the node makes through 127.0.0.1.
const podGateway = "10.87.0.1"

// TestHostPortLoopback: a pod's hostPorts answer from the node on
// 127.0.0.1 as on the node's own address, TCP and UDP; the pod sees the
// bridge's address as the peer, never 127.0.0.1, and a connection through
// 127.0.0.1 outlives a restart of tug; a hostPort on hostIP
// 127.0.0.1 answers on loopback only; a pod cannot reach the node's
// loopback through its gateway (what route_localnet on the bridge would
// otherwise open); and once the pod is removed, 127.0.0.1:hostPort
// refuses.
func TestHostPortLoopback(t *testing.T) {
	t.Parallel()
	tg, w := startNetTug(t)
	const (
		webPort       = 8090 // TCP -> httpd on 80, every address
		udpPort       = 8091 // UDP -> 53, the test's echo in the pod's namespace
		loOnlyPort    = 8092 // TCP -> httpd on 81, hostIP 127.0.0.1
		peerPort      = 8093 // TCP -> 82, the test's listener in the pod's namespace
		udpLoOnlyPort = 8094 // UDP -> 54, the test's echo, hostIP 127.0.0.1
	)
	script := `mkdir -p /www && echo "hello from $(hostname)" > /www/index.html && httpd -p 80 -h /www && httpd -p 81 -h /www && ` + idle
	ports := fmt.Sprintf(`      ports:
        - containerPort: 80
          hostPort: %d
        - containerPort: 53
          hostPort: %d
          protocol: UDP
        - containerPort: 81
          hostPort: %d
          hostIP: 127.0.0.1
        - containerPort: 82
          hostPort: %d
        - containerPort: 54
          hostPort: %d
          protocol: UDP
          hostIP: 127.0.0.1
`, webPort, udpPort, loOnlyPort, peerPort, udpLoOnlyPort)
	tg.writeManifest("web.yaml", shPod("web", tg.image, script)+ports)
	tg.waitRunning(startTimeout, "web", "main", 0)
	podNS := filepath.Join(tg.runDir, "ns", tg.uid("web"), "net")

	node := tg.nodeHTTPClient()
	answers := func(t *testing.T, c *http.Client, url string) {
		t.Helper()
		tg := tg.forTest(t)
		tg.waitFor(startTimeout, url+" to answer", func() (bool, error) {
			body, err := get(c, url)
			if err != nil {
				return false, err
			}
			return strings.Contains(body, "hello from web"), fmt.Errorf("body %q", body)
		})
	}

	t.Run("TCP on 127.0.0.1 and the node's address", func(t *testing.T) {
		answers(t, node, fmt.Sprintf("http://127.0.0.1:%d/", webPort))
		answers(t, node, fmt.Sprintf("http://%s:%d/", nodeAddr, webPort))
		answers(t, httpClientIn(w.outside, 3*time.Second), fmt.Sprintf("http://%s:%d/", nodeAddr, webPort))
	})

	// Not a subtest: it restarts tug.
	loopbackConnOutlivesRestart(tg, podNS, "127.0.0.1:"+strconv.Itoa(peerPort), ":82")

	t.Run("UDP on 127.0.0.1", func(t *testing.T) {
		udpEcho(t, podNS, ":53")
		if reply := udpExchange(tg.forTest(t), tg.netns, "127.0.0.1:"+strconv.Itoa(udpPort), "ping"); reply != "ping from "+podGateway {
			t.Errorf("the pod answered %q, want %q", reply, "ping from "+podGateway)
		}
	})

	t.Run("hostIP 127.0.0.1 answers on loopback only", func(t *testing.T) {
		answers(t, node, fmt.Sprintf("http://127.0.0.1:%d/", loOnlyPort))
		for _, from := range []struct{ name, netns string }{{"the node", tg.netns}, {"outside", w.outside}} {
			addr := fmt.Sprintf("%s:%d", nodeAddr, loOnlyPort)
			if err := dialRefused(from.netns, addr); err != nil {
				t.Errorf("%s:%d from %s: %v", nodeAddr, loOnlyPort, from.name, err)
			}
		}
	})

	t.Run("no pod reaches the node's loopback", func(t *testing.T) {
		// A listener on the node's loopback, and a route in the pod that
		// sends 127.0.0.2 to the gateway: the node routes 127.0.0.0/8 that
		// arrives on the bridge (route_localnet), and tug's input chain
		// must drop it.
		l := listenIn(t, tg.netns, "tcp4", "127.0.0.2:0")
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		loopbackDropped(t, podNS, "eth0", podGateway, l.Addr().String())
	})

	t.Run("no packet to 127.0.0.1 from outside is forwarded", func(t *testing.T) {
		// A neighbour that sends to 127.0.0.1:<loopback-only hostPort>
		// through the node's address must not reach the pod: prerouting
		// leaves a loopback destination alone, and the node drops it as
		// martian. UDP, so that the pod's end sees the datagram even if
		// the neighbour's kernel would not take the answer.
		echo := udpEcho(t, podNS, ":54")
		routeLoopbackVia(t, w.outside, "downlink", nodeAddr, "127.0.0.1")
		addr := "127.0.0.1:" + strconv.Itoa(udpLoOnlyPort)
		c, err := dialIn(context.Background(), w.outside, "udp4", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for range 3 {
			if _, err := c.Write([]byte("from outside")); err != nil {
				t.Fatalf("send to %s from outside: %v", addr, err)
			}
		}
		// The node's own datagram, sent after them, is answered.
		if reply := udpExchange(tg.forTest(t), tg.netns, addr, "from the node"); reply != "from the node from "+podGateway {
			t.Errorf("the pod answered %q", reply)
		}
		time.Sleep(time.Second)
		if got := echo.payloads(); slices.Contains(got, "from outside") {
			t.Errorf("the pod got %q: a datagram to 127.0.0.1 from outside reached it", got)
		}
	})

	if err := os.Remove(tg.manifestPath("web.yaml")); err != nil {
		t.Fatal(err)
	}
	tg.waitGone(removeTimeout, tg.uid("web"), "pod web removed")
	addr := "127.0.0.1:" + strconv.Itoa(webPort)
	tg.waitFor(removeTimeout, addr+" to refuse once the pod is gone", func() (bool, error) {
		err := dialRefused(tg.netns, addr)
		return err == nil, err
	})
	if s := tg.netState(); s.rules != 0 {
		t.Errorf("%+v: hostPort rules left after the pod was removed", s)
	}
}

// dialRefused connects to addr over TCP from the network namespace at
// path and returns nil if the connection is refused.
func dialRefused(path, addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := dialIn(ctx, path, "tcp4", addr)
	if err == nil {
		c.Close()
		return errors.New("connected, want refused")
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("%w, want connection refused", err)
	}
	return nil
}

// routeLoopbackVia routes host, an address of 127.0.0.0/8, from the
// network namespace at path to gw out of dev, and takes answers from
// 127.0.0.0/8 there: what a pod or a neighbour that ignores the martian
// rules does (with NET_RAW it needs neither, it writes and reads the
// frames itself).
func routeLoopbackVia(t *testing.T, path, dev, gw, host string) {
	t.Helper()
	for _, args := range [][]string{
		{"ip", "route", "replace", host + "/32", "via", gw, "dev", dev, "table", "local"},
		{"sysctl", "-w", "net.ipv4.conf." + dev + ".route_localnet=1"},
	} {
		if out, err := exec.Command("nsenter", append([]string{"--net=" + path}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("in %s: %s: %v: %s", path, strings.Join(args, " "), err, out)
		}
	}
}

// loopbackDropped connects over TCP from the network namespace at path to
// addr, an address of 127.0.0.0/8 that it routes to gw out of dev
// (routeLoopbackVia), and fails the test unless the connection times out:
// dropped on the way.
func loopbackDropped(t *testing.T, path, dev, gw, addr string) {
	t.Helper()
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	routeLoopbackVia(t, path, dev, gw, host)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	c, err := dialIn(ctx, path, "tcp4", addr)
	switch {
	case err == nil:
		c.Close()
		t.Errorf("connected to %s through %s", addr, gw)
	case errors.Is(err, syscall.ECONNREFUSED):
		t.Fatalf("connect to %s: %v (the route through %s was not taken)", addr, err, gw)
	case !errors.Is(err, context.DeadlineExceeded) && !os.IsTimeout(err):
		t.Errorf("connect to %s through %s: %v, want a timeout (dropped)", addr, gw, err)
	}
}

// echoConn is a UDP echo server: it answers each datagram with
// "<payload> from <source address>" and keeps the payloads.
type echoConn struct {
	mu   sync.Mutex
	seen []string
}

func (e *echoConn) payloads() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.seen)
}

// udpEcho starts a UDP echo server on addr inside the network namespace
// at path, until the test ends.
func udpEcho(t *testing.T, path, addr string) *echoConn {
	l := listenPacketIn(t, path, addr)
	e := &echoConn{}
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := l.ReadFrom(buf)
			if err != nil {
				return
			}
			e.mu.Lock()
			e.seen = append(e.seen, string(buf[:n]))
			e.mu.Unlock()
			_, _ = l.WriteTo(fmt.Appendf(nil, "%s from %s", buf[:n], from.(*net.UDPAddr).IP), from)
		}
	}()
	return e
}

// udpExchange sends payload to addr from the network namespace at path,
// again every second until an answer comes, and returns the answer.
func udpExchange(tg *tug, path, addr, payload string) string {
	tg.t.Helper()
	c, err := dialIn(context.Background(), path, "udp4", addr)
	if err != nil {
		tg.t.Fatal(err)
	}
	defer c.Close()
	var reply string
	tg.waitFor(startTimeout, "an answer from "+addr, func() (bool, error) {
		if _, err := c.Write([]byte(payload)); err != nil {
			return false, err
		}
		c.SetReadDeadline(time.Now().Add(time.Second))
		buf := make([]byte, 512)
		n, err := c.Read(buf)
		if err != nil {
			return false, err
		}
		reply = string(buf[:n])
		return true, nil
	})
	return reply
}

// loopbackConnOutlivesRestart connects from the node to addr (on
// 127.0.0.1), a hostPort that leads to podAddr in the pod's network
// namespace at podNS where the test echoes lines, and checks that the pod
// sees the bridge's address as the peer and that the connection still
// carries data after tug is killed and started again: it is the kernel's
// (conntrack's), not tug's.
func loopbackConnOutlivesRestart(tg *tug, podNS, addr, podAddr string) {
	t := tg.t
	t.Helper()
	l := listenIn(t, podNS, "tcp4", podAddr)
	seen := make(chan string, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		seen <- c.RemoteAddr().(*net.TCPAddr).IP.String()
		_, _ = io.Copy(c, c) // echo
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := dialIn(ctx, tg.netns, "tcp4", addr)
	if err != nil {
		t.Fatalf("connect to %s from the node: %v", addr, err)
	}
	defer c.Close()
	select {
	case ip := <-seen:
		if ip != podGateway {
			t.Errorf("the pod saw the connection come from %s, want the bridge's %s", ip, podGateway)
		}
	case <-ctx.Done():
		t.Fatal("the pod accepted no connection")
	}
	r := bufio.NewReader(c)
	echo := func(line string) {
		t.Helper()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write([]byte(line + "\n")); err != nil {
			t.Fatalf("write %q: %v", line, err)
		}
		if got, err := r.ReadString('\n'); err != nil || got != line+"\n" {
			t.Fatalf("echo of %q: %q, %v", line, got, err)
		}
	}
	echo("before the restart")
	tg.Kill()
	tg.Start()
	tg.waitFor(startTimeout, "tug to answer again", func() (bool, error) {
		_, stderr, code := tg.runCLI("pods")
		return code == 0, fmt.Errorf("tug pods exited %d: %s", code, stderr)
	})
	echo("after the restart")
}
