//go:build e2e

package e2e

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"tug/internal/podview"
	"tug/internal/testutil"
)

// TestTwoInstancesOneNode: two tugs with their own
// containerd namespaces, directories, bridges, pod CIDRs and cgroup roots
// run side by side in one network namespace, as tests and benchmarks run
// them on one host. Each has pods with a pod network and a hostPort. A
// restart of either, and the housekeeping that follows, leaves the other's
// pods exactly as they were (same task PIDs, veths, leases, nftables
// table, cgroups), and removing a pod from one removes only that pod's
// pieces.
func TestTwoInstancesOneNode(t *testing.T) {
	t.Parallel()
	testutil.RequireCommand(t, "nft")
	// The node has an uplink to an outside namespace: the hostPorts are
	// asked from there, so their traffic is routed through the node, past
	// the forward chain of the tug that turned forwarding on (a).
	var w *world
	a := startTug(t, tugOpts{beforeStart: func(tg *tug) { w = newWorld(tg) }})
	b := startTug(t, tugOpts{netns: a.netns, args: []string{"--bridge-name", "tugb0", "--pod-cidr", "10.87.1.0/24"}})
	insts := []*instanceOnNode{
		{tg: a, name: "a", bridge: "tug0", ports: [2]int{8081, 8083}, outside: w.outside},
		{tg: b, name: "b", bridge: "tugb0", ports: [2]int{8082, 8084}, outside: w.outside},
	}
	for _, in := range insts {
		in.tg.writeManifest("web.yaml", webPod("web-"+in.name, in.tg.image, in.ports[0]))
		in.tg.writeManifest("extra.yaml", webPod("extra-"+in.name, in.tg.image, in.ports[1]))
	}
	for _, in := range insts {
		for _, name := range []string{"web", "extra"} {
			in.tg.waitRunning(startTimeout, name+"-"+in.name, "main", 0)
			in.waitHostPort(name)
		}
	}
	before := map[string]nodeShare{}
	for _, in := range insts {
		s := in.share()
		if len(s.tasks) != 2 || len(s.veths) != 2 || len(s.leases) != 2 || s.rules() != 2 || len(s.cgroups) == 0 {
			t.Fatalf("instance %s before the restarts: %s; want 2 tasks, veths, leases and hostPort rules, and cgroups", in.name, s)
		}
		before[in.name] = s
	}
	if shared := sharedVeths(before["a"], before["b"]); len(shared) > 0 {
		t.Fatalf("veths on both bridges: %v", shared)
	}

	// Restart each, one after the other, and let housekeeping run on both.
	for _, in := range insts {
		if err := in.tg.Stop(); err != nil {
			t.Fatalf("stop tug %s: %v", in.name, err)
		}
		in.tg.Start()
		in.tg.waitPod(startTimeout, "web-"+in.name, "its status after the restart", func(*podview.View) error { return nil })
	}
	time.Sleep(5 * time.Second) // housekeeping runs every 2 s
	for _, in := range insts {
		if got := in.share(); !got.equal(before[in.name]) {
			t.Errorf("instance %s after the restarts:\n%s\nwant as before:\n%s", in.name, got, before[in.name])
		}
		if line := findLine(in.tg.output(), "removing sandbox"); line != "" {
			t.Errorf("tug %s removed a sandbox: %s", in.name, line)
		}
		for _, name := range []string{"web", "extra"} {
			in.waitHostPort(name)
		}
	}

	// Removing a pod from one instance removes its pieces only.
	for i, in := range insts {
		other := insts[1-i]
		t.Run("remove from "+in.name, func(t *testing.T) {
			tg := in.tg.forTest(t)
			uid := tg.uid("extra-" + in.name)
			tg.removeManifest("extra.yaml")
			tg.waitGone(removeTimeout, uid, "pod extra-"+in.name+" to be removed")
			tg.waitFor(removeTimeout, "the network and cgroups of extra-"+in.name+" to be removed", func() (bool, error) {
				s := in.share()
				if len(s.veths) != 1 || len(s.leases) != 1 || s.rules() != 1 || slices.ContainsFunc(s.cgroups, func(c string) bool { return strings.Contains(c, uid) }) {
					return false, fmt.Errorf("%s", s)
				}
				return true, nil
			})
			time.Sleep(3 * time.Second) // housekeeping, once more
			if got, want := other.share(), before[other.name]; !got.equal(want) {
				t.Errorf("instance %s after a pod of %s was removed:\n%s\nwant as before:\n%s", other.name, in.name, got, want)
			}
			other.waitHostPort("web")
			if got := in.share(); !reflect.DeepEqual(got.tasks, withoutUID(before[in.name].tasks, uid)) {
				t.Errorf("instance %s's own other pod: tasks %v, want %v", in.name, got.tasks, withoutUID(before[in.name].tasks, uid))
			}
			in.waitHostPort("web")
		})
		before[in.name] = in.share()
	}
}

// instanceOnNode is one of the tugs sharing a node, with its bridge and
// the hostPorts of its pods web-<name> and extra-<name>.
type instanceOnNode struct {
	tg      *tug
	name    string
	bridge  string
	ports   [2]int // web's, extra's
	outside string // the namespace the hostPorts are asked from
}

// waitHostPort waits until the hostPort of the instance's pod (web or
// extra) answers from outside the node with that pod's page.
func (in *instanceOnNode) waitHostPort(pod string) {
	tg := in.tg
	tg.t.Helper()
	port := in.ports[0]
	if pod == "extra" {
		port = in.ports[1]
	}
	url := fmt.Sprintf("http://%s:%d/", nodeAddr, port)
	tg.waitFor(startTimeout, url+" to answer with "+pod+"-"+in.name+"'s page", func() (bool, error) {
		body, err := get(httpClientIn(in.outside, 3*time.Second), url)
		if err != nil {
			return false, err
		}
		return strings.Contains(body, "hello from "+pod+"-"+in.name), fmt.Errorf("body %q", body)
	})
}

// nodeShare is what one tug has on the node: its pods' tasks, the veths on
// its bridge, its leases, its nftables table and its cgroups.
type nodeShare struct {
	tasks   map[string]string // container ID -> "<pod uid> pid <pid>"
	veths   []string          // "<name> <alias>"
	leases  []string          // "<address> <uid>"
	table   string            // nft list table ip tug-<namespace>
	cgroups []string          // every cgroup below its root, in every hierarchy
}

func (s nodeShare) equal(o nodeShare) bool {
	return maps.Equal(s.tasks, o.tasks) && slices.Equal(s.veths, o.veths) && slices.Equal(s.leases, o.leases) &&
		s.table == o.table && slices.Equal(s.cgroups, o.cgroups)
}

// rules counts the hostPort rules in the table.
func (s nodeShare) rules() int { return len(dnatRule.FindAllString(s.table, -1)) }

func (s nodeShare) String() string {
	pods := map[string]bool{}
	for _, c := range s.cgroups {
		for el := range strings.SplitSeq(c, "/") {
			if strings.HasPrefix(el, "pod") {
				pods[el] = true
			}
		}
	}
	return fmt.Sprintf("tasks %v\nveths %v\nleases %v\n%d cgroups, of pods %v\ntable:\n%s",
		s.tasks, s.veths, s.leases, len(s.cgroups), slices.Sorted(maps.Keys(pods)), s.table)
}

// share reads what the instance has on the node now.
func (in *instanceOnNode) share() nodeShare {
	tg := in.tg
	t := tg.t
	t.Helper()
	s := nodeShare{tasks: map[string]string{}}
	cs, err := tg.containers()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		s.tasks[c.ID] = fmt.Sprintf("%s pid %d", c.UID(), c.PID)
	}
	err = testutil.InNetns(tg.netns, func() error {
		br, err := netlink.LinkByName(in.bridge)
		if err != nil {
			return err
		}
		links, err := netlink.LinkList()
		if err != nil {
			return err
		}
		for _, l := range links {
			if l.Attrs().MasterIndex == br.Attrs().Index {
				s.veths = append(s.veths, l.Attrs().Name+" "+l.Attrs().Alias)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("veths on %s: %v", in.bridge, err)
	}
	slices.Sort(s.veths)
	dir := filepath.Join(tg.rootDir, "network", "leases")
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	for _, e := range entries {
		if b, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil && !strings.HasPrefix(e.Name(), ".") {
			s.leases = append(s.leases, e.Name()+" "+strings.TrimSpace(string(b)))
		}
	}
	s.table = run(t, "ip", "netns", "exec", netnsName(tg.netns), "nft", "list", "table", "ip", "tug-"+tg.ns)
	roots, err := cgroupPaths(tg.cgroupRoot())
	if err != nil {
		t.Fatal(err)
	}
	for _, root := range roots {
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				s.cgroups = append(s.cgroups, p)
			}
			return nil
		})
	}
	slices.Sort(s.cgroups)
	return s
}

// sharedVeths returns the veth names two shares both have.
func sharedVeths(a, b nodeShare) []string {
	var out []string
	for _, v := range a.veths {
		name, _, _ := strings.Cut(v, " ")
		for _, w := range b.veths {
			if other, _, _ := strings.Cut(w, " "); other == name {
				out = append(out, name)
			}
		}
	}
	return out
}

// withoutUID returns tasks without those of pod uid.
func withoutUID(tasks map[string]string, uid string) map[string]string {
	out := maps.Clone(tasks)
	maps.DeleteFunc(out, func(_, v string) bool { return strings.HasPrefix(v, uid+" ") })
	return out
}
