//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tug/internal/pod"
	"tug/internal/podview"
)

// The QoS tests run twice in CI: here on the host (cgroup v1, hybrid) and
// in the cgroup v2 QEMU guest (make test-v2 runs the tests named TestQoS*).
// Their assertions name the files of the mode they run in.

// resourcesPod is a pod with one container running script, with the given
// resources block (indented for the container) and restart policy.
func resourcesPod(name, image, script, resources, restartPolicy string) string {
	return podYAML{name: name, grace: 2, restartPolicy: restartPolicy, containers: []ctrYAML{
		{name: "main", image: image, script: script, extra: "      resources:\n" + resources},
	}}.String()
}

// cgroupWants checks cgroup files of the container whose task is pid: on
// v1 the file is looked up in the hierarchy named by its prefix
// ("cpu.shares" in cpu, "memory.limit_in_bytes" in memory).
func cgroupWants(t *testing.T, pid uint32, want map[string]string) {
	t.Helper()
	for file, value := range want {
		controller, _, _ := strings.Cut(file, ".")
		dir, err := taskCgroup(pid, controller)
		if err != nil {
			t.Fatal(err)
		}
		got, err := readCgroupFile(dir, file)
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		if got != value {
			t.Errorf("%s/%s = %q, want %q", dir, file, got, value)
		}
	}
}

func TestQoSCgroupTree(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	root := tg.cgroupRoot()
	tg.writeManifest("guaranteed.yaml", resourcesPod("guaranteed", tg.image, idle,
		"        limits: {cpu: 500m, memory: 64Mi}\n", "Always"))
	tg.writeManifest("burstable.yaml", resourcesPod("burstable", tg.image, idle,
		"        requests: {cpu: 250m, memory: 32Mi}\n        limits: {memory: 128Mi}\n", "Always"))
	tg.writeManifest("besteffort.yaml", shPod("besteffort", tg.image, idle))

	tests := []struct {
		pod, class, qosClass string
		v1, v2               map[string]string
	}{{
		pod: "guaranteed", class: "", qosClass: "Guaranteed",
		v1: map[string]string{"cpu.cfs_quota_us": "50000", "cpu.cfs_period_us": "100000", "cpu.shares": "512", "memory.limit_in_bytes": "67108864"},
		v2: map[string]string{"cpu.max": "50000 100000", "cpu.weight": "20", "memory.max": "67108864"},
	}, {
		pod: "burstable", class: "burstable", qosClass: "Burstable",
		v1: map[string]string{"cpu.cfs_quota_us": "-1", "cpu.shares": "256", "memory.limit_in_bytes": "134217728"},
		v2: map[string]string{"cpu.max": "max 100000", "cpu.weight": "10", "memory.max": "134217728"},
	}, {
		pod: "besteffort", class: "besteffort", qosClass: "BestEffort",
		v1: map[string]string{"cpu.cfs_quota_us": "-1", "cpu.shares": "2"},
		v2: map[string]string{"cpu.max": "max 100000", "cpu.weight": "1", "memory.max": "max"},
	}}
	for _, tt := range tests {
		t.Run(tt.pod, func(t *testing.T) {
			tg := tg.forTest(t)
			c := tg.waitRunning(startTimeout, tt.pod, "main", 0)
			want := tt.v1
			controller := "cpu"
			if cgroupV2() {
				want, controller = tt.v2, ""
			}
			// The container's cgroup is <root>/[<class>/]pod<uid>/<container ID>.
			dir, err := taskCgroup(c.PID, controller)
			if err != nil {
				t.Fatal(err)
			}
			wantDir := filepath.Join("/", root, tt.class, "pod"+tg.uid(tt.pod), c.ID)
			if !strings.HasSuffix(dir, wantDir) {
				t.Errorf("container cgroup %s, want .../%s", dir, wantDir)
			}
			cgroupWants(t, c.PID, want)
			if v, err := tg.podView(tt.pod); err != nil || v.Status.QOSClass != tt.qosClass {
				t.Errorf("status.qosClass = %q (%v), want %s", v.Status.QOSClass, err, tt.qosClass)
			}
		})
	}

	t.Run("classes", func(t *testing.T) {
		// The burstable class gets the shares of its pods' requests, the
		// best-effort class the minimum.
		file, burstable, besteffort := "cpu.shares", "256", "2"
		h := filepath.Join(cgroupMount, "cpu")
		if cgroupV2() {
			file, burstable, besteffort, h = "cpu.weight", "10", "1", cgroupMount
		}
		for class, want := range map[string]string{"burstable": burstable, "besteffort": besteffort} {
			if got, err := readCgroupFile(filepath.Join(h, root, class), file); err != nil || got != want {
				t.Errorf("%s/%s = %q (%v), want %s", class, file, got, err, want)
			}
		}
	})

	t.Run("removed with the pods", func(t *testing.T) {
		tg := tg.forTest(t)
		for _, name := range []string{"guaranteed", "burstable", "besteffort"} {
			uid := tg.uid(name)
			if err := os.Remove(tg.manifestPath(name + ".yaml")); err != nil {
				t.Fatal(err)
			}
			tg.waitFor(removeTimeout, "the cgroups of pod "+name+" to go", func() (bool, error) {
				left, err := podCgroups(root, uid)
				if err != nil || len(left) > 0 {
					return false, fmt.Errorf("left: %v, %v", left, err)
				}
				return true, nil
			})
		}
	})
}

// podCgroups returns the directories of the pod's cgroup, in any class and
// hierarchy.
func podCgroups(root, uid string) ([]string, error) {
	var all []string
	for _, class := range []string{"", "burstable", "besteffort"} {
		dirs, err := cgroupPaths(filepath.Join(root, class, "pod"+uid))
		if err != nil {
			return nil, err
		}
		all = append(all, dirs...)
	}
	return all, nil
}

func TestQoSOrphanCgroupRemovedAtStart(t *testing.T) {
	t.Parallel()
	const orphan = "00000000-0000-4000-8000-0000000000aa"
	var planted []string
	tg := startTug(t, tugOpts{beforeStart: func(tg *tug) {
		// A pod cgroup that no pod has, left by a tug that crashed (in every
		// hierarchy tug uses on v1).
		hs, err := hierarchies()
		if err != nil {
			tg.t.Fatal(err)
		}
		for _, h := range hs {
			switch filepath.Base(h) {
			case "cgroup" /* v2: the mount itself */, "cpu", "cpuacct", "memory", "pids":
				dir := filepath.Join(h, tg.cgroupRoot(), "burstable", "pod"+orphan)
				if err := os.MkdirAll(dir, 0o755); err != nil {
					tg.t.Fatal(err)
				}
				planted = append(planted, dir)
			}
		}
	}})
	if len(planted) == 0 {
		t.Fatal("planted no orphan cgroup")
	}
	tg.writeManifest("keep.yaml", shPod("keep", tg.image, idle))
	tg.waitRunning(startTimeout, "keep", "main", 0)
	tg.waitFor(removeTimeout, "the orphaned pod cgroup to be removed", func() (bool, error) {
		left, err := podCgroups(tg.cgroupRoot(), orphan)
		if err != nil || len(left) > 0 {
			return false, fmt.Errorf("left: %v, %v", left, err)
		}
		return true, nil
	})
	if left, err := podCgroups(tg.cgroupRoot(), tg.uid("keep")); err != nil || len(left) == 0 {
		t.Errorf("the running pod's cgroup is gone: %v, %v", left, err)
	}
}

func TestQoSOOMKilled(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{args: []string{"--crash-loop-back-off-initial", "1s"}})
	// 64 MiB of 'x' into a shell variable, under a 32 MiB limit.
	hog := `echo allocating; a=$(head -c 67108864 /dev/zero | tr '\000' x); echo survived ${#a}`
	tg.writeManifest("hog.yaml", resourcesPod("hog", tg.image, hog, "        limits: {memory: 32Mi}\n", "OnFailure"))
	tg.writeManifest("calm.yaml", shPod("calm", tg.image, idle))
	calm := tg.waitRunning(startTimeout, "calm", "main", 0)

	v := tg.waitPod(startTimeout, "hog", "a container OOM-killed and restarted", func(v *podview.View) error {
		if len(v.Status.ContainerStatuses) != 1 {
			return fmt.Errorf("no container status")
		}
		cs := v.Status.ContainerStatuses[0]
		last := cs.LastTerminationState.Terminated
		if cs.State.Terminated != nil && cs.State.Terminated.Reason == pod.ReasonOOMKilled {
			last = cs.State.Terminated
		}
		if last == nil || last.Reason != pod.ReasonOOMKilled {
			return fmt.Errorf("last termination %+v", last)
		}
		if last.ExitCode != 137 {
			return fmt.Errorf("exit code %d, want 137", last.ExitCode)
		}
		if cs.RestartCount < 1 {
			return fmt.Errorf("restart count %d", cs.RestartCount)
		}
		return nil
	})
	t.Logf("hog: restarts %d, %s", v.Status.ContainerStatuses[0].RestartCount, describeStatus(&v.Status))

	out, _, code := tg.runCLI("pods")
	if code != 0 || !strings.Contains(out, "hog-"+hostname) {
		t.Fatalf("tug pods (exit %d):\n%s", code, out)
	}
	out, _, _ = tg.runCLI("inspect", "hog-"+hostname)
	if !strings.Contains(out, pod.ReasonOOMKilled) {
		t.Errorf("tug inspect does not say OOMKilled:\n%s", out)
	}
	if lines, err := tg.logLines("hog", "main", 0); err != nil || indexLine(lines, "stdout", "allocating") < 0 || indexLine(lines, "stdout", "survived 67108864") >= 0 {
		t.Errorf("the hog's first attempt logged %q (%v): want it killed while allocating", lines, err)
	}
	// The other pod is unaffected: still its first attempt, same task.
	now, ok, err := tg.container(tg.uid("calm"), "main")
	if err != nil || !ok || now.ID != calm.ID || now.PID != calm.PID {
		t.Errorf("the calm pod's container changed: %+v (%v), was %+v", now, err, calm)
	}
}

func TestQoSCPUEnforcement(t *testing.T) {
	tg := startTug(t, tugOpts{})
	// Both spin on CPU 0, so they compete for one core.
	spin := `trap 'exit 0' TERM; taskset -c 0 sh -c 'while :; do :; done' & wait`
	tg.writeManifest("important.yaml", resourcesPod("important", tg.image, spin, "        requests: {cpu: 900m}\n", "Always"))
	tg.writeManifest("greedy.yaml", shPod("greedy", tg.image, spin))
	important := tg.waitRunning(startTimeout, "important", "main", 0)
	greedy := tg.waitRunning(startTimeout, "greedy", "main", 0)

	time.Sleep(time.Second) // both spinning
	i0, err := cpuUsage(important.PID)
	if err != nil {
		t.Fatal(err)
	}
	g0, err := cpuUsage(greedy.PID)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Second)
	i1, _ := cpuUsage(important.PID)
	g1, _ := cpuUsage(greedy.PID)
	di, dg := i1-i0, g1-g0
	t.Logf("over 5 s on one core: Burstable (900m) %v, BestEffort %v of CPU time", time.Duration(di)*time.Microsecond, time.Duration(dg)*time.Microsecond)
	if di < 2*int64(time.Second/time.Microsecond) {
		t.Errorf("the Burstable pod got only %v of CPU in 5 s", time.Duration(di)*time.Microsecond)
	}
	if dg <= 0 || di < 5*dg {
		t.Errorf("Burstable %d µs vs BestEffort %d µs: want at least 5 times as much", di, dg)
	}
}
