package qos

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/moby/sys/mountinfo"

	"tug/internal/pod"
	"tug/internal/testutil"
)

const gi = 1 << 30

// fakeHost is a 2-CPU node with 8 GiB.
var fakeHost = host{milliCPU: 2000, memory: 8 * gi, pageSize: 4096}

// fakeManager returns a Manager on a stand-in cgroupfs in a temporary
// directory: version 1 (a hybrid host's hierarchies, cpu and cpuacct
// separate as on this project's test host) or version 2.
func fakeManager(t *testing.T, version int, cfg Config) *Manager {
	t.Helper()
	mnt := t.TempDir()
	mounts := []*mountinfo.Info{{Mountpoint: mnt, FSType: "tmpfs"}}
	if version == 2 {
		mounts = []*mountinfo.Info{{Mountpoint: mnt, FSType: "cgroup2"}}
		if err := os.WriteFile(filepath.Join(mnt, "cgroup.controllers"), []byte("cpuset cpu io memory hugetlb pids rdma misc\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	} else {
		for _, h := range []struct{ dir, fstype, opts string }{
			{"cpu", "cgroup", "rw,cpu"}, {"cpuacct", "cgroup", "rw,cpuacct"}, {"cpuset", "cgroup", "rw,cpuset"},
			{"memory", "cgroup", "rw,memory"}, {"pids", "cgroup", "rw,pids"},
			{"systemd", "cgroup", "rw,name=systemd"}, {"unified", "cgroup2", "rw"},
		} {
			if err := os.Mkdir(filepath.Join(mnt, h.dir), 0o755); err != nil {
				t.Fatal(err)
			}
			mounts = append(mounts, &mountinfo.Info{Mountpoint: filepath.Join(mnt, h.dir), FSType: h.fstype, VFSOptions: h.opts})
		}
	}
	cfg.Mount = mnt
	if cfg.Log == nil {
		cfg.Log = testutil.Logger(t)
	}
	m, err := newManager(cfg, mounts, fakeHost)
	if err != nil {
		t.Fatal(err)
	}
	if m.Version() != version {
		t.Fatalf("Version = %d, want %d", m.Version(), version)
	}
	return m
}

// The three pods of the acceptance test.
func guaranteedPod(uid string) *pod.Pod {
	return mkpod(uid, []pod.Container{ctr("app", res(nil, rl{"cpu": "500m", "memory": "64Mi"}))})
}

func burstablePod(uid, cpu string) *pod.Pod {
	return mkpod(uid, []pod.Container{ctr("app", res(rl{"cpu": cpu, "memory": "32Mi"}, rl{"memory": "128Mi"}))})
}

func bestEffortPod(uid string) *pod.Pod {
	return mkpod(uid, []pod.Container{ctr("app", res(nil, nil))})
}

func TestNewRejects(t *testing.T) {
	mnt := t.TempDir()
	v1 := []*mountinfo.Info{
		{Mountpoint: filepath.Join(mnt, "cpu"), FSType: "cgroup", VFSOptions: "rw,cpu"},
		{Mountpoint: filepath.Join(mnt, "memory"), FSType: "cgroup", VFSOptions: "rw,memory"},
	}
	tests := []struct {
		name   string
		cfg    Config
		mounts []*mountinfo.Info
		err    error
	}{
		{"no cgroups", Config{}, nil, ErrNoCgroups},
		{"root leaves the hierarchy", Config{Root: "a/../.."}, v1, ErrInvalidConfig},
		{"reserved beyond the node", Config{Reserved: pod.ResourceList{"memory": pod.MustParseQuantity("9Gi")}}, v1, ErrInvalidConfig},
		{"all cpu reserved", Config{Reserved: pod.ResourceList{"cpu": pod.MustParseQuantity("2")}}, v1, ErrInvalidConfig},
		{"oom floor out of range", Config{MinOOMScoreAdj: -1001}, v1, ErrInvalidConfig},
		{"pids limit without pids", Config{PodPidsLimit: 100}, v1, ErrMissingController},
		{"no memory controller", Config{}, v1[:1], ErrMissingController},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Mount = mnt
			if _, err := newManager(tt.cfg, tt.mounts, fakeHost); !errors.Is(err, tt.err) {
				t.Errorf("newManager: %v, want %v", err, tt.err)
			}
		})
	}
}

func TestManagerTree(t *testing.T) {
	for _, version := range []int{1, 2} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			ctx := context.Background()
			m := fakeManager(t, version, Config{
				Root:         "tug/pods",
				Reserved:     pod.ResourceList{"cpu": pod.MustParseQuantity("500m"), "memory": pod.MustParseQuantity("1Gi")},
				PodPidsLimit: 100,
			})
			if err := m.Init(ctx); err != nil {
				t.Fatal(err)
			}
			if err := m.Init(ctx); err != nil {
				t.Fatalf("second Init: %v", err)
			}
			// Root capped to allocatable: 1500m, 7 GiB.
			checkCgroup(t, m, "/tug/pods", limitsWant{shares: 1536, memory: 7 * gi})
			checkCgroup(t, m, "/tug/pods/besteffort", limitsWant{shares: MinShares})
			checkCgroup(t, m, "/tug/pods/burstable", limitsWant{shares: MinShares})
			if version == 2 {
				for _, dir := range []string{"", "tug", "tug/pods", "tug/pods/burstable", "tug/pods/besteffort"} {
					if got := readCgroup(t, m, "cpu", dir, "cgroup.subtree_control"); got != "+cpu +memory +pids" {
						t.Errorf("%q subtree_control = %q", dir, got)
					}
				}
			}

			g, err := m.EnsurePod(ctx, guaranteedPod("g"))
			if err != nil || g != "/tug/pods/podg" {
				t.Fatalf("EnsurePod(guaranteed) = %q, %v", g, err)
			}
			checkCgroup(t, m, g, limitsWant{shares: 512, quota: 50000, memory: 64 << 20, pids: 100})

			b1, err := m.EnsurePod(ctx, burstablePod("b1", "900m"))
			if err != nil || b1 != "/tug/pods/burstable/podb1" {
				t.Fatalf("EnsurePod(burstable) = %q, %v", b1, err)
			}
			// No cpu limit: no quota; a memory limit in every container: memory.
			checkCgroup(t, m, b1, limitsWant{shares: 921, quota: -1, memory: 128 << 20, pids: 100})
			checkCgroup(t, m, "/tug/pods/burstable", limitsWant{shares: 921})

			b2, err := m.EnsurePod(ctx, burstablePod("b2", "100m"))
			if err != nil {
				t.Fatal(err)
			}
			checkCgroup(t, m, b2, limitsWant{shares: 102})
			checkCgroup(t, m, "/tug/pods/burstable", limitsWant{shares: 1024})

			be, err := m.EnsurePod(ctx, bestEffortPod("be"))
			if err != nil || be != "/tug/pods/besteffort/podbe" {
				t.Fatalf("EnsurePod(besteffort) = %q, %v", be, err)
			}
			checkCgroup(t, m, be, limitsWant{shares: MinShares, quota: -1, memory: -1, pids: 100})

			uids, err := m.List()
			if err != nil || !slices.Equal(uids, []string{"b1", "b2", "be", "g"}) {
				t.Errorf("List = %q, %v", uids, err)
			}

			// A container cgroup runc made, in every hierarchy (hybrid:
			// name=systemd and unified too), goes with its pod.
			for _, h := range m.lay.all {
				if err := os.MkdirAll(filepath.Join(h, b1, "ctr1"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := m.RemovePod(ctx, "b1"); err != nil {
				t.Fatal(err)
			}
			checkGone(t, m, b1)
			checkCgroup(t, m, "/tug/pods/burstable", limitsWant{shares: 102})
			if err := m.RemovePod(ctx, "b1"); err != nil {
				t.Errorf("second RemovePod: %v", err)
			}
			for _, uid := range []string{"b2", "be", "g"} {
				if err := m.RemovePod(ctx, uid); err != nil {
					t.Fatal(err)
				}
			}
			checkCgroup(t, m, "/tug/pods/burstable", limitsWant{shares: MinShares})
			if uids, err := m.List(); err != nil || len(uids) != 0 {
				t.Errorf("List after removal = %q, %v", uids, err)
			}
		})
	}
}

// TestEnsurePodCheap checks that an unchanged pod writes nothing, and that
// a changed one is rewritten, unlimited values included.
func TestEnsurePodCheap(t *testing.T) {
	ctx := context.Background()
	m := fakeManager(t, 1, Config{})
	if err := m.Init(ctx); err != nil {
		t.Fatal(err)
	}
	p := burstablePod("b", "200m")
	dir, err := m.EnsurePod(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	shares := filepath.Join(m.ctrl["cpu"], dir, "cpu.shares")
	if err := os.WriteFile(shares, []byte("7"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := m.EnsurePod(ctx, p); err != nil {
		t.Fatal(err)
	}
	if got := readCgroup(t, m, "cpu", dir, "cpu.shares"); got != "7" {
		t.Errorf("unchanged pod rewritten: cpu.shares = %s", got)
	}
	// The pod gains a cpu limit, then loses its memory limit.
	p.Spec.Containers[0].Resources.Limits["cpu"] = pod.MustParseQuantity("1")
	if _, err := m.EnsurePod(ctx, p); err != nil {
		t.Fatal(err)
	}
	checkCgroup(t, m, dir, limitsWant{shares: 204, quota: 100000, memory: 128 << 20})
	delete(p.Spec.Containers[0].Resources.Limits, "memory")
	if _, err := m.EnsurePod(ctx, p); err != nil {
		t.Fatal(err)
	}
	checkCgroup(t, m, dir, limitsWant{shares: 204, quota: 100000, memory: -1})
	// Removed behind the manager's back: recreated.
	if err := m.RemovePod(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	m.pods["b"] = &podState{class: Burstable, res: resourcesOf(p), want: m.podSettings(Burstable, resourcesOf(p)), applied: true}
	if _, err := m.EnsurePod(ctx, p); err != nil {
		t.Fatal(err)
	}
	checkCgroup(t, m, dir, limitsWant{shares: 204})
}

// TestEnsurePodClassChange: an edit that moves a pod to another class
// creates it there and removes the old (empty) cgroup; after a restart
// (a new Manager) too.
func TestEnsurePodClassChange(t *testing.T) {
	ctx := context.Background()
	m := fakeManager(t, 2, Config{})
	if err := m.Init(ctx); err != nil {
		t.Fatal(err)
	}
	old, err := m.EnsurePod(ctx, burstablePod("x", "500m"))
	if err != nil {
		t.Fatal(err)
	}
	checkCgroup(t, m, "/tugpods/burstable", limitsWant{shares: 512})
	dir, err := m.EnsurePod(ctx, guaranteedPod("x"))
	if err != nil || dir != "/tugpods/podx" {
		t.Fatalf("EnsurePod = %q, %v", dir, err)
	}
	checkGone(t, m, old)
	checkCgroup(t, m, "/tugpods/burstable", limitsWant{shares: MinShares})

	// A restarted tug finds the Guaranteed cgroup of a pod now BestEffort.
	m2, err := newManager(Config{Mount: m.lay.unified, Log: m.log}, []*mountinfo.Info{{Mountpoint: m.lay.unified, FSType: "cgroup2"}}, fakeHost)
	if err != nil {
		t.Fatal(err)
	}
	if dir, err = m2.EnsurePod(ctx, bestEffortPod("x")); err != nil || dir != "/tugpods/besteffort/podx" {
		t.Fatalf("EnsurePod = %q, %v", dir, err)
	}
	checkGone(t, m2, "/tugpods/podx")
	if uids, _ := m2.List(); !slices.Equal(uids, []string{"x"}) {
		t.Errorf("List = %q", uids)
	}
}

func TestMemoryQoS(t *testing.T) {
	ctx := context.Background()
	m := fakeManager(t, 2, Config{MemoryQoS: true})
	if err := m.Init(ctx); err != nil {
		t.Fatal(err)
	}
	b, err := m.EnsurePod(ctx, burstablePod("b", "100m"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := m.EnsurePod(ctx, guaranteedPod("g"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		dir, want string
	}{
		{b, "33554432"},                    // 32Mi request
		{g, "67108864"},                    // 64Mi
		{"/tugpods/burstable", "33554432"}, // burstable pods
		{"/tugpods", "100663296"},          // guaranteed + burstable pods
	} {
		if got := readCgroup(t, m, "memory", tt.dir, "memory.min"); got != tt.want {
			t.Errorf("%s memory.min = %s, want %s", tt.dir, got, tt.want)
		}
	}
	if err := m.RemovePod(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if got := readCgroup(t, m, "memory", "/tugpods", "memory.min"); got != "67108864" {
		t.Errorf("root memory.min after removal = %s", got)
	}

	// v1 ignores it.
	m1 := fakeManager(t, 1, Config{MemoryQoS: true})
	if m1.memoryQoS {
		t.Error("MemoryQoS kept on v1")
	}
}

func TestContainer(t *testing.T) {
	const mi = 1 << 20
	gp := guaranteedPod("g")
	bp := burstablePod("b", "250m")
	bep := bestEffortPod("e")
	tests := []struct {
		name    string
		version int
		cfg     Config
		p       *pod.Pod
		want    pod.LinuxResources
		oom     int
	}{
		{"guaranteed, floor 0", 1, Config{}, gp, pod.LinuxResources{CPUShares: 512, CPUQuota: 50000, CPUPeriod: 100000, MemoryLimit: 64 * mi}, 0},
		{"guaranteed, no floor", 1, Config{MinOOMScoreAdj: -1000}, gp, pod.LinuxResources{CPUShares: 512, CPUQuota: 50000, CPUPeriod: 100000, MemoryLimit: 64 * mi}, -997},
		{"burstable", 1, Config{}, bp, pod.LinuxResources{CPUShares: 256, MemoryLimit: 128 * mi}, 997}, // 1000 - 1000*32Mi/8Gi
		{"best effort", 1, Config{MinOOMScoreAdj: -999}, bep, pod.LinuxResources{CPUShares: 2}, 1000},
		{"v2: oom group", 2, Config{}, bep, pod.LinuxResources{CPUShares: 2, Unified: map[string]string{"memory.oom.group": "1"}}, 1000},
		{"v2 memory qos, burstable", 2, Config{MemoryQoS: true}, bp, pod.LinuxResources{CPUShares: 256, MemoryLimit: 128 * mi,
			Unified: map[string]string{"memory.oom.group": "1", "memory.min": "33554432", "memory.high": "124149760"}}, 997},
		{"v2 memory qos, guaranteed: no memory.high", 2, Config{MemoryQoS: true, MinOOMScoreAdj: -1000}, gp, pod.LinuxResources{CPUShares: 512, CPUQuota: 50000, CPUPeriod: 100000, MemoryLimit: 64 * mi,
			Unified: map[string]string{"memory.oom.group": "1", "memory.min": "67108864"}}, -997},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := fakeManager(t, tt.version, tt.cfg)
			got := m.Container(tt.p, &tt.p.Spec.Containers[0])
			if got.OOMScoreAdj == nil || *got.OOMScoreAdj != tt.oom {
				t.Errorf("OOMScoreAdj = %v, want %d", got.OOMScoreAdj, tt.oom)
			}
			got.OOMScoreAdj = nil
			if got.CPUShares != tt.want.CPUShares || got.CPUQuota != tt.want.CPUQuota || got.CPUPeriod != tt.want.CPUPeriod ||
				got.MemoryLimit != tt.want.MemoryLimit || !maps.Equal(got.Unified, tt.want.Unified) {
				t.Errorf("Container =\n %+v, want\n %+v", got, tt.want)
			}
		})
	}
}

func TestInvalidUID(t *testing.T) {
	ctx := context.Background()
	m := fakeManager(t, 1, Config{})
	for _, uid := range []string{"", "..", "a/b"} {
		if _, err := m.EnsurePod(ctx, bestEffortPod(uid)); !errors.Is(err, ErrInvalidUID) {
			t.Errorf("EnsurePod(%q): %v", uid, err)
		}
		if err := m.RemovePod(ctx, uid); !errors.Is(err, ErrInvalidUID) {
			t.Errorf("RemovePod(%q): %v", uid, err)
		}
	}
}

// TestTwoRootsOneHost: two tugs with their own cgroup roots on one host,
// with a pod of the same UID in both, list and remove only their own pod
// cgroups (housekeeping's view of the tree).
func TestTwoRootsOneHost(t *testing.T) {
	ctx := context.Background()
	a := fakeManager(t, 2, Config{Root: "tug-a"})
	b, err := newManager(Config{Root: "tug-b", Mount: a.lay.unified, Log: a.log}, []*mountinfo.Info{{Mountpoint: a.lay.unified, FSType: "cgroup2"}}, fakeHost)
	if err != nil {
		t.Fatal(err)
	}
	for m, uids := range map[*Manager][]string{a: {"a", "x"}, b: {"b", "x"}} {
		if err := m.Init(ctx); err != nil {
			t.Fatal(err)
		}
		for _, uid := range uids {
			if _, err := m.EnsurePod(ctx, burstablePod(uid, "100m")); err != nil {
				t.Fatal(err)
			}
		}
	}
	if uids, err := a.List(); err != nil || !slices.Equal(uids, []string{"a", "x"}) {
		t.Errorf("a.List = %q, %v; want a, x", uids, err)
	}
	if uids, err := b.List(); err != nil || !slices.Equal(uids, []string{"b", "x"}) {
		t.Errorf("b.List = %q, %v; want b, x", uids, err)
	}
	for _, uid := range []string{"x", "b"} {
		if err := a.RemovePod(ctx, uid); err != nil {
			t.Fatal(err)
		}
	}
	checkGone(t, a, "/tug-a/burstable/podx")
	checkCgroup(t, b, "/tug-b/burstable/podx", limitsWant{shares: MilliCPUToShares(100)})
	checkCgroup(t, b, "/tug-b/burstable/podb", limitsWant{shares: MilliCPUToShares(100)})
	if uids, err := b.List(); err != nil || !slices.Equal(uids, []string{"b", "x"}) {
		t.Errorf("b.List after a removed x and b = %q, %v; want b, x", uids, err)
	}
}
