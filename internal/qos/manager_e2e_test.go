//go:build e2e

package qos

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"tug/internal/pod"
	"tug/internal/testutil"
)

// realManager returns a Manager on the host's cgroups with a root of its
// own ("tugtest-<random>"), initialised, and removes that root with
// everything below it when the test ends. It runs on cgroup v1/hybrid
// hosts and on cgroup v2 (the QEMU guest) alike; tests branch on Version.
func realManager(t *testing.T, cfg Config) *Manager {
	t.Helper()
	testutil.RequireRoot(t)
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	cfg.Root = "tugtest-" + hex.EncodeToString(b[:])
	cfg.Log = testutil.Logger(t)
	cfg.MinOOMScoreAdj = ownOOMScoreAdj(t)
	m, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := m.removeTree(m.root); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	if err := m.Init(context.Background()); err != nil {
		t.Fatalf("Init: %v", err)
	}
	t.Logf("cgroup v%d, root %s", m.Version(), m.root)
	return m
}

// ownOOMScoreAdj is what tug passes as Config.MinOOMScoreAdj.
func ownOOMScoreAdj(t *testing.T) int {
	data, err := os.ReadFile("/proc/self/oom_score_adj")
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestE2ETree is the acceptance test at the cgroup level: a
// Guaranteed pod (cpu 500m, memory 64Mi) directly under the root with a
// quota of 50000/100000 and a 64Mi memory limit; Burstable and BestEffort
// pods in their class directories with the expected shares (weights on
// v2); burstable's shares following its pods; nothing left after removal.
func TestE2ETree(t *testing.T) {
	ctx := context.Background()
	m := realManager(t, Config{
		Reserved:     pod.ResourceList{"cpu": pod.MustParseQuantity("500m"), "memory": pod.MustParseQuantity("64Mi")},
		PodPidsLimit: 1000,
	})
	checkCgroup(t, m, m.root, limitsWant{shares: MilliCPUToShares(m.host.milliCPU - 500), memory: (m.host.memory - 64<<20) / m.host.pageSize * m.host.pageSize})
	checkCgroup(t, m, m.root+"/besteffort", limitsWant{shares: MinShares})
	checkCgroup(t, m, m.root+"/burstable", limitsWant{shares: MinShares})
	if err := m.Init(ctx); err != nil {
		t.Fatalf("second Init: %v", err)
	}

	g, err := m.EnsurePod(ctx, guaranteedPod("g"))
	if err != nil {
		t.Fatal(err)
	}
	if g != m.root+"/podg" {
		t.Errorf("guaranteed pod at %s", g)
	}
	checkCgroup(t, m, g, limitsWant{shares: 512, quota: 50000, memory: 67108864, pids: 1000})

	b, err := m.EnsurePod(ctx, burstablePod("b", "900m"))
	if err != nil {
		t.Fatal(err)
	}
	if b != m.root+"/burstable/podb" {
		t.Errorf("burstable pod at %s", b)
	}
	checkCgroup(t, m, b, limitsWant{shares: 921, quota: -1, memory: 128 << 20, pids: 1000})
	checkCgroup(t, m, m.root+"/burstable", limitsWant{shares: 921})

	b2, err := m.EnsurePod(ctx, burstablePod("b2", "100m"))
	if err != nil {
		t.Fatal(err)
	}
	checkCgroup(t, m, m.root+"/burstable", limitsWant{shares: 1024})

	be, err := m.EnsurePod(ctx, bestEffortPod("be"))
	if err != nil {
		t.Fatal(err)
	}
	if be != m.root+"/besteffort/podbe" {
		t.Errorf("best-effort pod at %s", be)
	}
	checkCgroup(t, m, be, limitsWant{shares: MinShares, quota: -1, memory: -1, pids: 1000})

	if uids, err := m.List(); err != nil || !slices.Equal(uids, []string{"b", "b2", "be", "g"}) {
		t.Errorf("List = %q, %v", uids, err)
	}
	for _, uid := range []string{"b", "g", "be"} {
		if err := m.RemovePod(ctx, uid); err != nil {
			t.Fatal(err)
		}
	}
	checkCgroup(t, m, m.root+"/burstable", limitsWant{shares: 102})
	if err := m.RemovePod(ctx, "b2"); err != nil {
		t.Fatal(err)
	}
	checkCgroup(t, m, m.root+"/burstable", limitsWant{shares: MinShares})
	for _, dir := range []string{g, b, b2, be} {
		checkGone(t, m, dir)
	}
	if uids, err := m.List(); err != nil || len(uids) != 0 {
		t.Errorf("List after removal = %q, %v", uids, err)
	}
}

// TestE2EOrphanAndContainerCgroups: List finds a pod cgroup nobody
// ensured (an orphan), and RemovePod removes it together with the
// container cgroups runc creates below a pod in every hierarchy (on a
// hybrid host name=systemd and unified included).
func TestE2EOrphanAndContainerCgroups(t *testing.T) {
	ctx := context.Background()
	m := realManager(t, Config{})
	orphan := m.root + "/burstable/podorphan"
	for _, h := range m.lay.all {
		if err := os.MkdirAll(filepath.Join(h, orphan, "ctr-a"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p, err := m.EnsurePod(ctx, guaranteedPod("live"))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range m.lay.all {
		for _, c := range []string{"ctr-1", "ctr-2"} {
			if err := os.MkdirAll(filepath.Join(h, p, c), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	if uids, err := m.List(); err != nil || !slices.Equal(uids, []string{"live", "orphan"}) {
		t.Fatalf("List = %q, %v", uids, err)
	}
	for _, uid := range []string{"orphan", "live"} {
		if err := m.RemovePod(ctx, uid); err != nil {
			t.Fatal(err)
		}
	}
	checkGone(t, m, orphan)
	checkGone(t, m, p)
}

// startInCgroup starts `sleep`, puts it into dir (relative to the
// hierarchy root) in every hierarchy tug manages and in those without
// controllers (name=systemd, the hybrid unified one), as runc would for a
// container, and returns the process; it is killed when the test ends.
func startInCgroup(t *testing.T, m *Manager, dir string) *exec.Cmd {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		testutil.Missing(t, "sleep: %v", err)
	}
	cmd := exec.Command(sleep, "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	controllers := map[string]bool{}
	for _, h := range m.lay.v1 {
		controllers[h] = true
	}
	for _, h := range m.lay.all {
		if !slices.Contains(m.managed, h) && controllers[h] {
			continue // cpuset and friends need setting up first; runc does that
		}
		if err := os.MkdirAll(filepath.Join(h, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		procs := filepath.Join(h, dir, "cgroup.procs")
		if err := os.WriteFile(procs, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
			t.Fatalf("move sleep into %s: %v", procs, err)
		}
	}
	return cmd
}

// checkProcCgroup checks /proc/<pid>/cgroup: the process is in dir in the
// cpu, memory and pids hierarchies (v1) or in the unified one.
func checkProcCgroup(t *testing.T, pid int, dir string, version int) {
	t.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for line := range strings.Lines(strings.TrimSpace(string(data))) {
		f := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(f) != 3 {
			t.Fatalf("bad line %q", line)
		}
		ctrls := strings.Split(f[1], ",")
		check := f[1] == "" || slices.Contains(ctrls, "name=systemd")
		for _, c := range []string{"cpu", "memory", "pids"} {
			check = check || slices.Contains(ctrls, c)
		}
		if !check {
			continue
		}
		found++
		if f[2] != dir {
			t.Errorf("/proc/%d/cgroup: %q, want %s", pid, line, dir)
		}
	}
	if want := map[int]int{1: 4, 2: 1}[version]; found < want {
		t.Errorf("/proc/%d/cgroup has %d of the expected lines:\n%s", pid, found, data)
	}
}

// removeEventually retries RemovePod for a moment: a killed process
// leaves its cgroup asynchronously.
func removeEventually(t *testing.T, m *Manager, uid string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := m.RemovePod(context.Background(), uid)
		if err == nil {
			return
		}
		if !errors.Is(err, ErrBusy) || time.Now().After(deadline) {
			t.Fatalf("RemovePod: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestE2EProcess puts a real process into a container cgroup of a pod,
// checks /proc/<pid>/cgroup, checks that RemovePod refuses while it runs,
// then kills it and removes the pod.
func TestE2EProcess(t *testing.T) {
	ctx := context.Background()
	m := realManager(t, Config{})
	p, err := m.EnsurePod(ctx, burstablePod("proc", "200m"))
	if err != nil {
		t.Fatal(err)
	}
	ctr := p + "/ctr"
	cmd := startInCgroup(t, m, ctr)
	checkProcCgroup(t, cmd.Process.Pid, ctr, m.Version())

	if err := m.RemovePod(ctx, "proc"); !errors.Is(err, ErrBusy) {
		t.Fatalf("RemovePod with a process in the pod: %v, want ErrBusy", err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	removeEventually(t, m, "proc")
	checkGone(t, m, p)
}

// TestE2EClassChange: a pod edited from Burstable to Guaranteed gets its
// new cgroup at once; the old one stays while a container runs in it and
// goes on the first EnsurePod after the container is gone.
func TestE2EClassChange(t *testing.T) {
	ctx := context.Background()
	m := realManager(t, Config{})
	old, err := m.EnsurePod(ctx, burstablePod("x", "500m"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := startInCgroup(t, m, old+"/ctr")
	dir, err := m.EnsurePod(ctx, guaranteedPod("x"))
	if err != nil {
		t.Fatal(err)
	}
	if dir != m.root+"/podx" {
		t.Fatalf("EnsurePod = %s", dir)
	}
	checkCgroup(t, m, dir, limitsWant{shares: 512, quota: 50000, memory: 64 << 20})
	checkCgroup(t, m, m.root+"/burstable", limitsWant{shares: MinShares})
	if _, err := os.Stat(filepath.Join(m.ctrl["memory"], old)); err != nil {
		t.Fatalf("old cgroup removed under a running process: %v", err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := m.EnsurePod(ctx, guaranteedPod("x")); err != nil {
			t.Fatal(err)
		}
		if !m.existsAnywhere(old) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("old cgroup %s still there", old)
		}
		time.Sleep(50 * time.Millisecond)
	}
	removeEventually(t, m, "x")
	checkGone(t, m, dir)
}

// TestE2EContainerOOMScore: the OOM score is clamped to what this process
// may set (root without CAP_SYS_RESOURCE here), and a real process can be
// given it.
func TestE2EContainerOOMScore(t *testing.T) {
	m := realManager(t, Config{})
	own := ownOOMScoreAdj(t)
	p := guaranteedPod("oom")
	r := m.Container(p, &p.Spec.Containers[0])
	if r.OOMScoreAdj == nil || *r.OOMScoreAdj != max(GuaranteedOOMScoreAdj, own) {
		t.Fatalf("OOMScoreAdj = %v, want max(-997, %d)", r.OOMScoreAdj, own)
	}
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	adj := "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/oom_score_adj"
	if err := os.WriteFile(adj, []byte(strconv.Itoa(*r.OOMScoreAdj)), 0o644); err != nil {
		t.Errorf("set the clamped score %d: %v", *r.OOMScoreAdj, err)
	}
}

// TestE2ELowerQuotaDeferred: lowering a pod's cpu limit below that of a
// container cgroup still below it is refused by the v1 kernel (EINVAL);
// EnsurePod defers it instead of failing and applies it once the
// container is gone. On v2 the kernel accepts it at once.
func TestE2ELowerQuotaDeferred(t *testing.T) {
	ctx := context.Background()
	m := realManager(t, Config{})
	p := mkpod("q", []pod.Container{ctr("app", res(nil, rl{"cpu": "1", "memory": "64Mi"}))})
	dir, err := m.EnsurePod(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	c := dir + "/ctr"
	if err := os.Mkdir(filepath.Join(m.ctrl["cpu"], c), 0o755); err != nil {
		t.Fatal(err)
	}
	quota, period := "cpu.cfs_quota_us", "100000"
	if m.Version() == 2 {
		quota, period = "cpu.max", "100000 100000"
	}
	if err := os.WriteFile(filepath.Join(m.ctrl["cpu"], c, quota), []byte(period), 0o644); err != nil {
		t.Fatal(err)
	}
	p = mkpod("q", []pod.Container{ctr("app", res(nil, rl{"cpu": "500m", "memory": "64Mi"}))})
	if _, err := m.EnsurePod(ctx, p); err != nil {
		t.Fatalf("EnsurePod with a lower limit: %v", err)
	}
	if m.Version() == 1 {
		checkCgroup(t, m, dir, limitsWant{quota: 100000})
	} else {
		checkCgroup(t, m, dir, limitsWant{quota: 50000})
	}
	if err := os.Remove(filepath.Join(m.ctrl["cpu"], c)); err != nil {
		t.Fatal(err)
	}
	// The kernel lets go of a removed cgroup asynchronously: the next
	// syncs retry.
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := m.EnsurePod(ctx, p); err != nil {
			t.Fatal(err)
		}
		if m.pods["q"].applied || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	checkCgroup(t, m, dir, limitsWant{quota: 50000})
}

// TestE2EMemoryQoS: on cgroup v2, memory.min of the pod (its memory
// requests), of burstable (its pods') and of the root (guaranteed and
// burstable pods'), and memory.min/memory.high for the container; on v1
// the option is ignored.
func TestE2EMemoryQoS(t *testing.T) {
	ctx := context.Background()
	m := realManager(t, Config{MemoryQoS: true})
	b, err := m.EnsurePod(ctx, burstablePod("b", "100m"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := m.EnsurePod(ctx, guaranteedPod("g"))
	if err != nil {
		t.Fatal(err)
	}
	bp := burstablePod("b", "100m")
	r := m.Container(bp, &bp.Spec.Containers[0])
	if m.Version() == 1 {
		if r.Unified != nil {
			t.Errorf("Unified on v1: %v", r.Unified)
		}
		return
	}
	for _, tt := range []struct{ dir, want string }{
		{b, "33554432"}, {g, "67108864"}, {m.root + "/burstable", "33554432"}, {m.root, "100663296"},
	} {
		if got := readCgroup(t, m, "memory", tt.dir, "memory.min"); got != tt.want {
			t.Errorf("%s memory.min = %s, want %s", tt.dir, got, tt.want)
		}
	}
	want := strconv.FormatInt(MemoryHigh(32<<20, 128<<20, m.allocMem, m.host.pageSize), 10)
	if r.Unified["memory.min"] != "33554432" || r.Unified["memory.high"] != want || r.Unified["memory.oom.group"] != "1" {
		t.Errorf("Unified = %v, want memory.min 33554432, memory.high %s, memory.oom.group 1", r.Unified, want)
	}
	// The container values are accepted by the kernel below the pod.
	c := b + "/ctr"
	if err := os.Mkdir(filepath.Join(m.ctrl["memory"], c), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, v := range r.Unified {
		if err := os.WriteFile(filepath.Join(m.ctrl["memory"], c, name), []byte(v), 0o644); err != nil {
			t.Errorf("write %s: %v", name, err)
		}
	}
}

// TestE2EKillPod: KillPod kills every process of the pod's cgroup tree (two
// containers' cgroups) at once, through the kernel, on cgroup v1 and v2;
// a pod without a cgroup is no error.
func TestE2EKillPod(t *testing.T) {
	ctx := context.Background()
	m := realManager(t, Config{})
	bp := burstablePod("killed", "200m")
	p, err := m.EnsurePod(ctx, bp)
	if err != nil {
		t.Fatal(err)
	}
	a := startInCgroup(t, m, p+"/ctr-a")
	b := startInCgroup(t, m, p+"/ctr-b")
	exited := make(chan error, 2)
	for _, c := range []*exec.Cmd{a, b} {
		go func() { exited <- c.Wait() }()
	}
	if err := m.KillPod(bp); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		select {
		case err := <-exited:
			if err == nil || !strings.Contains(err.Error(), "killed") {
				t.Errorf("a process ended with %v, want killed", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a process of the pod still runs 10 s after KillPod")
		}
	}
	removeEventually(t, m, "killed")
	if err := m.KillPod(bp); err != nil {
		t.Errorf("KillPod of a pod without a cgroup: %v", err)
	}
}
