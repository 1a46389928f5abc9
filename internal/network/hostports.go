package network

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"tug/internal/pod"
)

// portKey is one published port on the node: what a socket holds.
type portKey struct {
	proto pod.Protocol
	ip    netip.Addr // the zero Addr: every address
	port  uint16
}

func (k portKey) String() string {
	s := fmt.Sprintf("hostPort %d/%s", k.port, k.proto)
	if k.ip.IsValid() {
		s += " on " + k.ip.String()
	}
	return s
}

// ports holds a socket for every hostPort a pod publishes, as the
// kubelet's hostport manager does: a TCP listening socket or a bound UDP
// socket on hostIP:hostPort in the node's network namespace, open while
// the pod has the port. No other program (sshd, another pod) can then
// bind the port, and a port someone already has is refused instead of
// being silently taken over by the DNAT rule. Nothing is ever accepted or
// read on these sockets: the DNAT rule sends the traffic to the pod.
//
// The sockets are the process's: they close when tug exits, and Init binds
// them again from the hostPort rules it finds (before any pod is synced).
// Safe for concurrent use.
type ports struct {
	mu   sync.Mutex
	held map[portKey]heldPort
}

type heldPort struct {
	uid string
	c   io.Closer
}

// portsOf returns the sockets a pod's hostPorts need (IPv6 hostIPs are not
// published, so not held).
func portsOf(hps []hostPort) []portKey {
	keys := make([]portKey, 0, len(hps))
	for _, hp := range hps {
		k := portKey{proto: hp.proto, ip: hp.hostIP, port: hp.hostPort}
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}

// acquire makes the pod uid hold exactly the ports keys: it binds those it
// does not hold yet and closes those it no longer publishes. A port that
// another pod or another program holds fails the whole call with a
// *pod.HostPortInUseError; the ports bound by this call are then closed
// again, and those the pod held before are kept.
func (ps *ports) acquire(uid string, keys []portKey) error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.held == nil {
		ps.held = map[portKey]heldPort{}
	}
	var bound []portKey
	undo := func() {
		for _, k := range bound {
			ps.held[k].c.Close()
			delete(ps.held, k)
		}
	}
	for _, k := range keys {
		h, ok := ps.held[k]
		if ok && h.uid == uid {
			continue
		}
		if ok {
			undo()
			return &pod.HostPortInUseError{Port: k.String(), By: "another pod"}
		}
		c, err := bindPort(k)
		if err != nil {
			undo()
			if errors.Is(err, unix.EADDRINUSE) {
				return &pod.HostPortInUseError{Port: k.String(), Err: err}
			}
			return fmt.Errorf("hold %s: %w", k, err)
		}
		ps.held[k] = heldPort{uid: uid, c: c}
		bound = append(bound, k)
	}
	for k, h := range ps.held {
		if h.uid == uid && !slices.Contains(keys, k) {
			h.c.Close()
			delete(ps.held, k)
		}
	}
	return nil
}

// release closes every socket the pod uid holds.
func (ps *ports) release(uid string) {
	_ = ps.acquire(uid, nil) // with no keys it cannot fail
}

// closeAll closes every socket (tug stops).
func (ps *ports) closeAll() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for k, h := range ps.held {
		h.c.Close()
		delete(ps.held, k)
	}
}

// bindPort opens the socket that holds k in the calling thread's network
// namespace. IP_FREEBIND lets it hold a hostIP that is not (yet) an
// address of the node, so no program can take the port once the address
// appears.
func bindPort(k portKey) (io.Closer, error) {
	addr := ":" + strconv.Itoa(int(k.port))
	if k.ip.IsValid() {
		addr = netip.AddrPortFrom(k.ip, k.port).String()
	}
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_FREEBIND, 1)
		})
		return errors.Join(err, serr)
	}}
	if k.proto == pod.ProtocolUDP {
		return lc.ListenPacket(context.Background(), "udp4", addr)
	}
	return lc.Listen(context.Background(), "tcp4", addr)
}

// keyFromComment returns the port a per-pod hostPort rule publishes, from
// its comment ("tug pod <uid> tcp *:8080 dnat 10.201.0.2:80").
func keyFromComment(comment string) (uid string, k portKey, ok bool) {
	uid, ok = uidFromComment(comment)
	if !ok {
		return "", k, false
	}
	f := strings.Fields(strings.TrimPrefix(comment, podCommentPrefix))
	if len(f) != 5 {
		return "", k, false
	}
	k.proto = pod.Protocol(strings.ToUpper(f[1]))
	host, port, found := strings.Cut(f[2], ":")
	n, err := strconv.ParseUint(port, 10, 16)
	if !found || err != nil || (k.proto != pod.ProtocolTCP && k.proto != pod.ProtocolUDP) {
		return "", k, false
	}
	k.port = uint16(n)
	if host != "*" {
		if k.ip, err = netip.ParseAddr(host); err != nil {
			return "", k, false
		}
	}
	return uid, k, true
}
