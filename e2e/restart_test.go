//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"golang.org/x/sys/unix"

	"tug/internal/pod"
	"tug/internal/podlabels"
	"tug/internal/podview"
	"tug/internal/testutil"
)

// containerdDown is how long TestContainerdRestart keeps containerd down:
// several relist periods and reconnection attempts.
const containerdDown = 5 * time.Second

// healthyAfterStart is how soon after its start a tug must answer /healthz
// with 200.
const healthyAfterStart = 2 * time.Second

// TestKill9Twenty kills tug with SIGKILL twenty times while ten pods run,
// starting it again on the same directories each time: every new tug is
// healthy within 2 s and no container is restarted or recreated.
func TestKill9Twenty(t *testing.T) {
	const (
		pods   = 10
		rounds = 20
	)
	names := make([]string, pods)
	for i := range names {
		names[i] = fmt.Sprintf("k%02d", i)
	}
	tg := startTug(t, tugOpts{
		healthzPort: freePort(t),
		beforeStart: func(tg *tug) {
			for _, n := range names {
				tg.writeManifest(n+".yaml", shPod(n, tg.image, idle))
			}
		},
	})
	for _, n := range names {
		tg.waitRunning(startTimeout, n, "main", 0)
	}
	tg.waitAllRunning(logTimeout, names)
	want := tg.snapshotTasks(names)
	tg.waitHealthy(startTimeout)

	var took []time.Duration
	for round := 1; round <= rounds; round++ {
		tg.Kill()
		if err := tg.sameTasks(want); err != nil {
			t.Fatalf("round %d, tug killed: %v", round, err)
		}
		tg.Start()
		d := tg.waitHealthy(10 * time.Second)
		took = append(took, d)
		if d > healthyAfterStart {
			t.Errorf("round %d: /healthz answered 200 only %v after tug started, want within %v", round, d.Round(time.Millisecond), healthyAfterStart)
		}
		// The new tug has adopted the pods (they are back in its API, with
		// their restart counts) before it is killed again. The kill then
		// lands at a different point in each round: at once, while the
		// workers make their first sync, or up to 450 ms later, when a sync
		// that finds its containers running has long finished (nothing logs
		// it).
		tg.waitAllRunning(logTimeout, names)
		time.Sleep(time.Duration(round%4) * 150 * time.Millisecond)
		if err := tg.sameTasks(want); err != nil {
			t.Fatalf("round %d, after the restart: %v", round, err)
		}
	}
	t.Logf("/healthz 200 after each of %d restarts: max %v, median %v, all %v", rounds,
		slices.Max(took).Round(time.Millisecond), median(took).Round(time.Millisecond), roundAll(took))

	// Let the last tug resync every pod, then look again, as a user would.
	time.Sleep(syncFrequency + time.Second)
	if err := tg.sameTasks(want); err != nil {
		t.Fatalf("after the last tug resynced: %v", err)
	}
	rows, _, err := tg.podTable()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if r := rows[staticName(n)]; r["STATUS"] != "Running" || r["RESTARTS"] != "0" || r["READY"] != "1/1" {
			t.Errorf("tug pods, %s: %v, want 1/1 Running with 0 restarts", n, r)
		}
	}
}

// TestContainerdRestart kills the private containerd with SIGKILL and
// starts it again as scripts/testenv.sh does: tug reports unhealthy while it
// is down, recovers on its own, and restarts nothing that kept running.
func TestContainerdRestart(t *testing.T) {
	testenv := requireTestenv(t)
	tg := startTug(t, tugOpts{
		healthzPort: freePort(t),
		beforeStart: func(tg *tug) {
			tg.writeManifest("cr-a.yaml", shPod("cr-a", tg.image, idle))
			tg.writeManifest("cr-b.yaml", shPod("cr-b", tg.image, idle))
		},
	})
	names := []string{"cr-a", "cr-b"}
	for _, n := range names {
		tg.waitRunning(startTimeout, n, "main", 0)
	}
	tg.waitAllRunning(logTimeout, names)
	tg.waitHealthy(logTimeout)
	want := tg.snapshotTasks(names)

	pid := testenv.containerdPID(t)
	// Whatever happens below, the next test needs containerd.
	t.Cleanup(func() { testenv.ensureContainerd(t) })
	if err := unix.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill containerd (pid %d): %v", pid, err)
	}
	killed := time.Now()
	waitFor(t, 10*time.Second, fmt.Sprintf("containerd (pid %d) to die", pid), func() (bool, error) {
		return !processAlive(pid), nil
	})
	var health string
	tg.waitFor(15*time.Second, "/healthz to fail while containerd is down", func() (bool, error) {
		code, body, err := tg.healthz()
		if err != nil {
			return false, err // tug must answer, with an error
		}
		health = fmt.Sprintf("%d %s", code, body)
		return code != 200, nil
	})
	t.Logf("/healthz with containerd down: %s", health)
	// containerd stays down a while: tug keeps saying so, and keeps running.
	for time.Since(killed) < containerdDown {
		code, body, err := tg.healthz()
		if err != nil || code == 200 {
			t.Fatalf("/healthz %v after containerd died: %d %s, %v; want tug to answer with an error", time.Since(killed).Round(time.Millisecond), code, body, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !tg.running() {
		t.Fatalf("tug exited while containerd was down: %v", tg.waitErr)
	}
	// The pods do not need containerd to run.
	for _, c := range want {
		if err := unix.Kill(int(c.PID), 0); err != nil {
			t.Errorf("with containerd down, the process %d of %v is gone: %v", c.PID, c, err)
		}
	}
	down := time.Since(killed)

	testenv.restartContainerd(t)
	back := time.Now()
	tg.waitFor(10*time.Second, "/healthz to answer 200 after containerd is back", func() (bool, error) {
		err := tg.healthOK()
		return err == nil, err
	})
	t.Logf("containerd was down %v; tug healthy %v after it was back", down.Round(time.Millisecond), time.Since(back).Round(time.Millisecond))
	if !tg.running() {
		t.Fatalf("tug exited: %v", tg.waitErr)
	}

	// tug works again: a new pod starts.
	tg.writeManifest("cr-new.yaml", shPod("cr-new", tg.image, idle))
	tg.waitRunning(startTimeout, "cr-new", "main", 0)
	// Let tug relist and resync every pod, then check that nothing was
	// restarted or recreated.
	time.Sleep(syncFrequency + time.Second)
	tg.waitAllRunning(logTimeout, append(names, "cr-new"))
	if err := tg.sameTasks(want); err != nil {
		t.Fatal(err)
	}
}

// TestAdoptionRemovesOrphans stops tug, deletes one of two manifests and
// starts tug again: the new tug removes the deleted pod's containers,
// namespaces, volumes and logs, and leaves the other pod alone.
func TestAdoptionRemovesOrphans(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{beforeStart: func(tg *tug) {
		tg.writeManifest("stays.yaml", shPod("stays", tg.image, idle))
		tg.writeManifest("orphan.yaml", cachePod("orphan", tg.image))
	}})
	stays := tg.waitRunning(startTimeout, "stays", "main", 0)
	tg.waitRunning(startTimeout, "orphan", "main", 0)
	tg.waitLog(logTimeout, "orphan", "main", 0, "wrote")
	left := tg.podLeftovers("orphan")
	if s := left(); len(missingLeftovers(s)) > 0 {
		t.Fatalf("the orphan-to-be lacks %v of what must go; it has: %s", missingLeftovers(s), strings.Join(s, "; "))
	}

	if err := tg.Stop(); err != nil {
		t.Fatalf("tug did not stop cleanly on SIGTERM: %v", err)
	}
	if err := os.Remove(tg.manifestPath("orphan.yaml")); err != nil {
		t.Fatal(err)
	}
	tg.Start()
	tg.waitFor(removeTimeout, "the new tug to remove the pod whose manifest is gone", func() (bool, error) {
		if s := left(); len(s) > 0 {
			return false, fmt.Errorf("still there: %s", strings.Join(s, "; "))
		}
		return true, nil
	})
	c, ok, err := tg.container(tg.uid("stays"), "main")
	if err != nil || !ok {
		t.Fatalf("container of the remaining pod: found %v, %v", ok, err)
	}
	if c.ID != stays.ID || c.PID != stays.PID || c.Status != containerd.Running || c.Attempt() != 0 {
		t.Errorf("the remaining pod changed: before %v, after %v", stays, c)
	}
}

// snapshotTasks returns the containers of the pods (named as in their
// manifests), by ID, each running its first attempt.
func (tg *tug) snapshotTasks(names []string) map[string]ctr {
	tg.t.Helper()
	want := map[string]ctr{}
	for _, n := range names {
		cs, err := tg.podContainers(tg.uid(n))
		if err != nil {
			tg.t.Fatal(err)
		}
		for _, c := range cs {
			if c.Status != containerd.Running || c.Attempt() != 0 {
				tg.t.Fatalf("pod %s: %v, want a running first attempt", n, c)
			}
			want[c.ID] = c
		}
	}
	return want
}

// sameTasks checks that the containers of want's pods are exactly want's,
// each still running the same process, with no restart recorded in its
// labels.
func (tg *tug) sameTasks(want map[string]ctr) error {
	uids := map[string]bool{}
	for _, c := range want {
		uids[c.UID()] = true
	}
	all, err := tg.containers()
	if err != nil {
		return err
	}
	var problems []string
	seen := 0
	for _, c := range all {
		if !uids[c.UID()] {
			continue
		}
		w, ok := want[c.ID]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("new container %v", c))
			continue
		case c.Status != containerd.Running || c.PID != w.PID:
			problems = append(problems, fmt.Sprintf("%v, was pid %d running", c, w.PID))
		case c.Attempt() != 0 || c.Labels[podlabels.LabelRestartCount] != "0":
			problems = append(problems, fmt.Sprintf("%v has restart count %q", c, c.Labels[podlabels.LabelRestartCount]))
		}
		seen++
	}
	if seen != len(want) {
		problems = append(problems, fmt.Sprintf("%d of %d containers left", seen, len(want)))
	}
	if len(problems) > 0 {
		return fmt.Errorf("containers changed:\n  %s", strings.Join(problems, "\n  "))
	}
	return nil
}

// waitAllRunning waits until tug's API lists each pod (named as in its
// manifest) as Running with every container running and not restarted.
func (tg *tug) waitAllRunning(timeout time.Duration, names []string) {
	tg.t.Helper()
	tg.waitFor(timeout, fmt.Sprintf("tug's API to show %d pods Running", len(names)), func() (bool, error) {
		ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
		defer cancel()
		list, err := tg.api().Pods(ctx)
		if err != nil {
			return false, err
		}
		byName := map[string]podview.View{}
		for _, v := range list.Items {
			byName[v.Metadata.Name] = v
		}
		for _, n := range names {
			v, ok := byName[staticName(n)]
			if !ok {
				return false, fmt.Errorf("pod %s not listed", n)
			}
			if v.Status.Phase != pod.PhaseRunning {
				return false, fmt.Errorf("pod %s: phase %s", n, v.Status.Phase)
			}
			for _, cs := range v.Status.ContainerStatuses {
				if cs.State.Running == nil || cs.RestartCount != 0 {
					return false, fmt.Errorf("pod %s: %s", n, describeStatus(&v.Status))
				}
			}
		}
		return true, nil
	})
}

// podLeftovers returns a function that lists what is left of the pod named
// name (in its manifest): containers, their snapshots, pinned namespaces,
// emptyDir mounts, the pod and log directories. Call it first while the pod
// runs, so that it knows the pod's containers and snapshots.
func (tg *tug) podLeftovers(name string) func() []string {
	tg.t.Helper()
	uid := tg.uid(name)
	nsDir := filepath.Join(tg.runDir, "ns", uid)
	podDir := filepath.Join(tg.rootDir, "pods", uid)
	logGlob := tg.podLogGlob(name)
	cs, err := tg.podContainers(uid)
	if err != nil || len(cs) == 0 {
		tg.t.Fatalf("containers of pod %s: %v, %v", name, cs, err)
	}
	return func() []string {
		var left []string
		add := func(what, s string, err error) {
			switch {
			case err != nil:
				left = append(left, what+": "+err.Error())
			case s != "":
				left = append(left, what+": "+s)
			}
		}
		now, err := tg.podContainers(uid)
		var ids []string
		for _, c := range now {
			ids = append(ids, c.String())
		}
		add("containers", strings.Join(ids, ", "), err)
		ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
		defer cancel()
		for _, c := range cs {
			_, err := tg.client.SnapshotService(c.Snapshotter).Stat(ctx, c.SnapshotKey)
			switch {
			case err == nil:
				add("snapshot", c.SnapshotKey, nil)
			case !isNotFound(err):
				add("snapshot", "", err)
			}
		}
		s, err := exists(nsDir)
		add("namespace dir", s, err)
		s, err = mountsLeft(nsDir)
		add("namespace mounts", s, err)
		s, err = mountsLeft(podDir)
		add("volume mounts", s, err)
		s, err = exists(podDir)
		add("pod dir", s, err)
		m, err := filepath.Glob(logGlob)
		add("log dir", strings.Join(m, " "), err)
		return left
	}
}

// leftoverKinds are the kinds of thing podLeftovers reports.
var leftoverKinds = []string{"containers", "snapshot", "namespace dir", "namespace mounts", "volume mounts", "pod dir", "log dir"}

// missingLeftovers returns the kinds of leftovers that left (podLeftovers'
// result) does not hold.
func missingLeftovers(left []string) []string {
	var missing []string
	for _, k := range leftoverKinds {
		if !slices.ContainsFunc(left, func(s string) bool { return strings.HasPrefix(s, k+": ") }) {
			missing = append(missing, k)
		}
	}
	return missing
}

// testenv is the test environment of scripts/testenv.sh: its directory,
// which holds the private containerd's pid file.
type testenv struct{ dir string }

// requireTestenv returns the test environment, skipping (failing in CI)
// the test when TUG_TESTENV_DIR is not set or has no containerd pid file.
func requireTestenv(t *testing.T) testenv {
	t.Helper()
	testutil.RequireRoot(t)
	dir := os.Getenv("TUG_TESTENV_DIR")
	if dir == "" {
		testutil.Missing(t, "TUG_TESTENV_DIR is not set (eval \"$(scripts/testenv.sh env)\")")
		return testenv{}
	}
	if _, err := os.Stat(filepath.Join(dir, "containerd.pid")); err != nil {
		testutil.Missing(t, "the test environment's containerd was not started by scripts/testenv.sh: %v", err)
	}
	return testenv{dir: dir}
}

// containerdPID returns the pid of the private containerd, checking that
// it is a containerd.
func (e testenv) containerdPID(t *testing.T) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(e.dir, "containerd.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatalf("containerd pid file: %v", err)
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil || filepath.Base(exe) != "containerd" {
		t.Fatalf("pid %d of %s/containerd.pid is not containerd (%q, %v)", pid, e.dir, exe, err)
	}
	return pid
}

// restartContainerd runs "scripts/testenv.sh restart-containerd", which
// kills the private containerd if it runs and starts it again with the same
// configuration, and waits until it answers.
func (e testenv) restartContainerd(t *testing.T) {
	t.Helper()
	cmd := exec.Command(repoPath(t, "scripts/testenv.sh"), "restart-containerd")
	cmd.Env = append(os.Environ(), "TUG_TESTENV_DIR="+e.dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/testenv.sh restart-containerd: %v\n%s", err, out)
	}
}

// ensureContainerd starts the private containerd again unless it answers.
func (e testenv) ensureContainerd(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(e.dir, "containerd.sock")); err == nil {
		if c, err := containerd.New(filepath.Join(e.dir, "containerd.sock"), containerd.WithTimeout(2*time.Second)); err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, err = c.Version(ctx)
			cancel()
			c.Close()
			if err == nil {
				return
			}
		}
	}
	e.restartContainerd(t)
}

// processAlive reports whether pid is a live process (not a zombie).
func processAlive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...; comm may hold spaces and parentheses.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z'
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}
