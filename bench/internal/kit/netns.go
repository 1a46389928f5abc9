package kit

import (
	"fmt"
	"os"
	"os/exec"
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
