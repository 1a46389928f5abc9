// Command benchnet measures how long tug takes to put a pod on the pod
// network, beside the same work done with iproute2 in the same run:
//
//	tug: pin the pod's namespaces (network.Namespaces.EnsureNamespaces)
//	     and network.Pods.SetUp (lease, veth pair, eth0 address, lo, default
//	     route, hostPort check)
//	ip:  ip netns add; ip link add vX type veth peer name vpX; ip link set
//	     vpX netns; ip link set vX master br up; ip -n link set vpX name
//	     eth0; ip -n addr add; ip -n link set eth0 up; ip -n link set lo up;
//	     ip -n route add default via gw
//
// It prints the median and p90 per pod of each, the ratio tug/ip, and the
// cost of a SetUp that finds everything in place (what every resync of a
// running pod pays).
//
// Run it as root: go run ./bench/benchnet [-n 50] [-markdown]. The
// statistics and the table are bench/internal/kit's. It re-executes itself
// in a new network and mount namespace, with / made private and a tmpfs
// on /run/netns, so no link, rule, sysctl or namespace pin of the host is
// touched; everything it made goes when it exits, and it removes it
// explicitly before that and checks that nothing is left.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"tug/bench/internal/kit"
	"tug/internal/network"
	"tug/internal/pod"
)

// envChild marks the copy of the program running in its own namespaces.
const envChild = "TUG_BENCHNET_CHILD"

func main() {
	n := flag.Int("n", 50, "pods per method")
	markdown := flag.Bool("markdown", false, "print the report's table as markdown (for docs/benchmarks.md)")
	flag.Parse()
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "benchnet: must run as root")
		os.Exit(2)
	}
	if os.Getenv(envChild) != "1" {
		os.Exit(reexec())
	}
	if err := run(*n, *markdown); err != nil {
		fmt.Fprintln(os.Stderr, "benchnet:", err)
		os.Exit(1)
	}
}

// reexec runs this program again in a new network and mount namespace.
func reexec() int {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchnet:", err)
		return 1
	}
	cmd := exec.Command(self, os.Args[1:]...)
	cmd.Env = append(os.Environ(), envChild+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET | syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchnet: run in new namespaces:", err)
		return 1
	}
	return 0
}

// isolate makes the mount namespace private and gives `ip netns` a tmpfs
// of its own, so that no pin reaches the host's /run/netns.
func isolate() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	if err := os.MkdirAll("/run/netns", 0o755); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", "/run/netns", "tmpfs", 0, "mode=755"); err != nil {
		return fmt.Errorf("tmpfs on /run/netns: %w", err)
	}
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return err
	}
	return netlink.LinkSetUp(lo)
}

func run(n int, markdown bool) error {
	if err := isolate(); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	tug, resync, err := benchTug(n, log)
	if err != nil {
		return fmt.Errorf("tug: %w", err)
	}
	var ip []time.Duration
	if _, err := exec.LookPath("ip"); err != nil {
		fmt.Fprintln(os.Stderr, "benchnet: no ip command; iproute2 column skipped")
	} else if ip, err = benchIP(n); err != nil {
		return fmt.Errorf("ip: %w", err)
	}
	if err := checkClean(); err != nil {
		return err
	}
	t := kit.Table{Header: []string{fmt.Sprintf("network setup per pod (n=%d)", n), "median", "p90"}, AlignRight: true}
	row := func(name string, d []time.Duration) {
		t.Row(name, kit.MS2(kit.Percentile(d, 0.5)), kit.MS2(kit.Percentile(d, 0.9)))
	}
	row("tug: pin namespaces + SetUp", tug.total)
	row("  of which pin (net, ipc, uts)", tug.pin)
	row("  of which SetUp", tug.setUp)
	row("tug: SetUp of a set-up pod (resync)", resync)
	if ip != nil {
		row("ip: netns add + veth + addr + route", ip)
	}
	if err := t.Write(os.Stdout, markdown); err != nil {
		return err
	}
	if ip != nil {
		fmt.Printf("ratio tug/ip (median): %s\n", kit.DurationRatio(kit.Percentile(tug.total, 0.5), kit.Percentile(ip, 0.5)))
	}
	return nil
}

// tugTimes are the per-pod durations of the tug method.
type tugTimes struct{ pin, setUp, total []time.Duration }

func benchTug(n int, log *slog.Logger) (tugTimes, []time.Duration, error) {
	ctx := context.Background()
	var tt tugTimes
	dir, err := os.MkdirTemp("", "benchnet-")
	if err != nil {
		return tt, nil, err
	}
	defer os.RemoveAll(dir)
	ns := network.NewNamespaces(dir+"/run", log)
	pods, err := network.New(network.Config{
		Bridge: "tugbench0", CIDR: netip.MustParsePrefix("10.87.0.0/24"), StateDir: dir + "/state", Log: log,
	})
	if err != nil {
		return tt, nil, err
	}
	if err := pods.Init(ctx); err != nil {
		return tt, nil, err
	}
	var all []*pod.Pod
	var paths []string
	defer func() {
		for _, p := range all {
			pods.TearDown(ctx, p.Metadata.UID)
			ns.RemoveNamespaces(ctx, p.Metadata.UID)
		}
		if br, err := netlink.LinkByName("tugbench0"); err == nil {
			netlink.LinkDel(br)
		}
	}()
	for i := range n {
		p := &pod.Pod{Metadata: pod.ObjectMeta{Name: fmt.Sprintf("bench-%d", i), Namespace: "default", UID: fmt.Sprintf("bench-uid-%d", i)}}
		p.Spec.Containers = []pod.Container{{Name: "c"}}
		all = append(all, p)
		start := time.Now()
		sb, err := ns.EnsureNamespaces(ctx, p)
		if err != nil {
			return tt, nil, err
		}
		pinned := time.Now()
		if _, err := pods.SetUp(ctx, p, sb.Net); err != nil {
			return tt, nil, err
		}
		done := time.Now()
		tt.pin = append(tt.pin, pinned.Sub(start))
		tt.setUp = append(tt.setUp, done.Sub(pinned))
		tt.total = append(tt.total, done.Sub(start))
		paths = append(paths, sb.Net)
	}
	var resync []time.Duration
	for i, p := range all {
		start := time.Now()
		if _, err := pods.SetUp(ctx, p, paths[i]); err != nil {
			return tt, nil, err
		}
		resync = append(resync, time.Since(start))
	}
	return tt, resync, nil
}

func benchIP(n int) ([]time.Duration, error) {
	const br, gw = "ipbench0", "10.87.1.1"
	if err := ip("link", "add", br, "type", "bridge"); err != nil {
		return nil, err
	}
	defer ip("link", "del", br)
	if err := ip("addr", "add", gw+"/24", "dev", br); err != nil {
		return nil, err
	}
	if err := ip("link", "set", br, "up"); err != nil {
		return nil, err
	}
	var times []time.Duration
	var made []string
	defer func() {
		for _, name := range made {
			ip("link", "del", "v"+name)
			ip("netns", "del", name)
		}
	}()
	for i := range n {
		name := fmt.Sprintf("bn%d", i)
		addr := fmt.Sprintf("10.87.1.%d/24", i+2)
		start := time.Now()
		made = append(made, name)
		steps := [][]string{
			{"netns", "add", name},
			{"link", "add", "v" + name, "type", "veth", "peer", "name", "vp" + name},
			{"link", "set", "vp" + name, "netns", name},
			{"link", "set", "v" + name, "master", br, "up"},
			{"-n", name, "link", "set", "vp" + name, "name", "eth0"},
			{"-n", name, "addr", "add", addr, "dev", "eth0"},
			{"-n", name, "link", "set", "eth0", "up"},
			{"-n", name, "link", "set", "lo", "up"},
			{"-n", name, "route", "add", "default", "via", gw},
		}
		for _, s := range steps {
			if err := ip(s...); err != nil {
				return nil, err
			}
		}
		times = append(times, time.Since(start))
	}
	return times, nil
}

func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// checkClean fails if a veth, a bridge or a netns pin is left.
func checkClean() error {
	links, err := netlink.LinkList()
	if err != nil {
		return err
	}
	var left []string
	for _, l := range links {
		if l.Type() == "veth" || l.Type() == "bridge" {
			left = append(left, l.Attrs().Name)
		}
	}
	pins, _ := os.ReadDir("/run/netns")
	for _, p := range pins {
		left = append(left, "/run/netns/"+p.Name())
	}
	if len(left) > 0 {
		return fmt.Errorf("left behind: %s", strings.Join(left, " "))
	}
	return nil
}
