package kit

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// Netns is a network namespace made with `ip netns add`: a benchmark's tug
// runs in one of its own, so that the pod network it sets up (bridge,
// veths, nftables rules, forwarding) never touches the host's. tug runs
// through nsenter, which enters the namespace and execs it.
type Netns struct {
	Name string
}

// NewNetns creates the namespace bench-<prefix>-<pid> with its loopback up.
func NewNetns(prefix string) (*Netns, error) {
	n := &Netns{Name: fmt.Sprintf("bench-%s-%d", prefix, os.Getpid())}
	if out, err := exec.Command("ip", "netns", "add", n.Name).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("ip netns add %s: %v: %s", n.Name, err, strings.TrimSpace(string(out)))
	}
	if out, err := exec.Command("ip", "-n", n.Name, "link", "set", "lo", "up").CombinedOutput(); err != nil {
		n.Delete()
		return nil, fmt.Errorf("ip -n %s link set lo up: %v: %s", n.Name, err, strings.TrimSpace(string(out)))
	}
	return n, nil
}

// Command returns the command that runs name with args inside the
// namespace (nsenter execs it: the command's process is name's).
func (n *Netns) Command(name string, args ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"--net=/run/netns/" + n.Name, name}, args...)...)
}

// Delete removes the namespace, after unpinning the given bind mounts of
// it (tug pins the namespace it runs in at <run-dir>/node-net).
func (n *Netns) Delete(pins ...string) {
	for _, p := range pins {
		_ = unix.Unmount(p, unix.MNT_DETACH)
	}
	_ = exec.Command("ip", "netns", "del", n.Name).Run()
}

// ListenIn listens on 127.0.0.1:port inside the network namespace netns
// (under /run/netns): a socket keeps the namespace it was made in, so a
// goroutine of its own, locked to its thread, enters the namespace for the
// socket call and returns. A benchmark serves a tug's upstream receivers
// so.
func ListenIn(netns string, port int) (net.Listener, error) {
	type result struct {
		l   net.Listener
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		l, back, err := listenIn(netns, port)
		if back {
			runtime.UnlockOSThread()
		} // else the thread is in the wrong namespace: it ends with this goroutine
		done <- result{l, err}
	}()
	r := <-done
	return r.l, r.err
}

// listenIn is ListenIn on the locked thread; back is whether the thread
// is in its own network namespace again.
func listenIn(netns string, port int) (l net.Listener, back bool, err error) {
	self, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return nil, true, err
	}
	defer self.Close()
	target, err := os.Open(filepath.Join("/run/netns", netns))
	if err != nil {
		return nil, true, err
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		return nil, true, fmt.Errorf("enter %s: %w", netns, err)
	}
	l, err = net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if berr := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); berr != nil {
		if l != nil {
			l.Close()
		}
		return nil, false, fmt.Errorf("return from %s: %w", netns, berr)
	}
	return l, true, err
}
