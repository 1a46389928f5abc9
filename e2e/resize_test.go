//go:build e2e

package e2e

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"tug/internal/pod"
	"tug/internal/podview"
)

// The in-place resize (KEP-1287) and pod-level resources (KEP-2837) tests.
// They run in the cgroup v2 guest too (make test-v2): their assertions are
// written with the v1 files and values, and v2Files turns them into the
// v2 ones there.

// resizeTimeout bounds the wait for a resize to show in the cgroups.
const resizeTimeout = 60 * time.Second

// cpuMem is a container's resources block: cpu and memory requests and
// limits ("" leaves one out), with an optional resizePolicy.
func cpuMem(reqCPU, reqMem, limCPU, limMem, policy string) string {
	var b strings.Builder
	b.WriteString("      resources:\n")
	for _, l := range []struct{ key, cpu, mem string }{{"requests", reqCPU, reqMem}, {"limits", limCPU, limMem}} {
		var kv []string
		if l.cpu != "" {
			kv = append(kv, "cpu: "+l.cpu)
		}
		if l.mem != "" {
			kv = append(kv, "memory: "+l.mem)
		}
		if len(kv) > 0 {
			fmt.Fprintf(&b, "        %s: {%s}\n", l.key, strings.Join(kv, ", "))
		}
	}
	if policy != "" {
		b.WriteString("      resizePolicy:\n" + policy)
	}
	return b.String()
}

// restartOnMemory is a resizePolicy that restarts the container for a
// memory resize.
const restartOnMemory = "        - {resourceName: cpu, restartPolicy: NotRequired}\n        - {resourceName: memory, restartPolicy: RestartContainer}\n"

// v2File returns the cgroup file and value that hold, on this host's
// cgroup version, what the v1 file holds with value: cpu.cfs_quota_us is
// cpu.max, memory.limit_in_bytes memory.max, cpu.shares cpu.weight (runc
// 1.1's conversion) on v2.
func v2File(file, value string) (string, string) {
	if !cgroupV2() {
		return file, value
	}
	switch file {
	case "cpu.cfs_quota_us":
		if value == "-1" {
			value = "max"
		}
		return "cpu.max", value + " 100000"
	case "memory.limit_in_bytes":
		if value == "-1" {
			value = "max"
		}
		return "memory.max", value
	case "cpu.shares":
		shares, _ := strconv.ParseUint(value, 10, 64)
		return "cpu.weight", strconv.FormatUint(1+(shares-2)*9999/262142, 10)
	}
	return file, value
}

// v2Files is v2File for every file of want.
func v2Files(want map[string]string) map[string]string {
	out := make(map[string]string, len(want))
	for f, v := range want {
		f, v = v2File(f, v)
		out[f] = v
	}
	return out
}

// waitCgroup waits until the cgroup file of the container whose task is
// pid reads want.
func (tg *tug) waitCgroup(pid uint32, file, want string) {
	tg.t.Helper()
	file, want = v2File(file, want)
	controller, _, _ := strings.Cut(file, ".")
	tg.waitFor(resizeTimeout, fmt.Sprintf("%s of process %d to be %s", file, pid, want), func() (bool, error) {
		dir, err := taskCgroup(pid, controller)
		if err != nil {
			return false, err
		}
		got, err := readCgroupFile(dir, file)
		if err != nil || got != want {
			return false, fmt.Errorf("%s/%s = %q (%v)", dir, file, got, err)
		}
		return true, nil
	})
}

// podCgroupFile reads file of pod uid's cgroup in class ("" for
// Guaranteed) below root.
func podCgroupFile(root, class, uid, file string) (string, error) {
	h := cgroupMount
	if !cgroupV2() {
		controller, _, _ := strings.Cut(file, ".")
		h = filepath.Join(cgroupMount, controller)
	}
	return readCgroupFile(filepath.Join(h, root, class, "pod"+uid), file)
}

// waitPodCgroup waits until file of pod uid's cgroup reads want.
func (tg *tug) waitPodCgroup(root, class, uid, file, want string) {
	tg.t.Helper()
	file, want = v2File(file, want)
	tg.waitFor(resizeTimeout, fmt.Sprintf("pod cgroup %s to be %s", file, want), func() (bool, error) {
		got, err := podCgroupFile(root, class, uid, file)
		if err != nil || got != want {
			return false, fmt.Errorf("%s = %q (%v)", file, got, err)
		}
		return true, nil
	})
}

// waitPID waits until the first attempt of the named container of the pod
// runs with a process ID other than 0 (the v2 guest once listed a running
// task with PID 0), and returns it.
func (tg *tug) waitPID(podName, name string) ctr {
	tg.t.Helper()
	c := tg.waitRunning(startTimeout, podName, name, 0)
	tg.waitFor(startTimeout, fmt.Sprintf("container %q of pod %s to have a PID", name, podName), func() (bool, error) {
		var ok bool
		var err error
		c, ok, err = tg.container(tg.uid(podName), name)
		if err != nil || !ok || c.PID == 0 {
			return false, fmt.Errorf("latest is %v (%v)", c, err)
		}
		return true, nil
	})
	return c
}

// containerStatusOf returns the status of container name in v.
func containerStatusOf(v *podview.View, name string) (pod.ContainerStatus, bool) {
	for _, cs := range v.Status.ContainerStatuses {
		if cs.Name == name {
			return cs, true
		}
	}
	return pod.ContainerStatus{}, false
}

func TestResizeInPlace(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	manifest := func(mainRes, otherRes string) string {
		return podYAML{name: "resize", grace: 2, containers: []ctrYAML{
			{name: "main", image: tg.image, script: idle, extra: mainRes},
			{name: "other", image: tg.image, script: idle, extra: otherRes},
		}}.String()
	}
	tg.writeManifest("resize.yaml", manifest(
		cpuMem("100m", "32Mi", "200m", "64Mi", ""),
		cpuMem("100m", "32Mi", "200m", "64Mi", restartOnMemory)))
	main := tg.waitRunning(startTimeout, "resize", "main", 0)
	other := tg.waitRunning(startTimeout, "resize", "other", 0)
	uid, root := tg.uid("resize"), tg.cgroupRoot()
	cgroupWants(t, main.PID, v2Files(map[string]string{"cpu.cfs_quota_us": "20000", "memory.limit_in_bytes": "67108864"}))

	t.Run("cpu and memory in place", func(t *testing.T) {
		tg := tg.forTest(t)
		tg.writeManifest("resize.yaml", manifest(
			cpuMem("300m", "48Mi", "400m", "96Mi", ""),
			cpuMem("100m", "32Mi", "200m", "64Mi", restartOnMemory)))
		tg.waitCgroup(main.PID, "cpu.cfs_quota_us", "40000")
		tg.waitCgroup(main.PID, "memory.limit_in_bytes", "100663296")
		cgroupWants(t, main.PID, v2Files(map[string]string{"cpu.shares": "307"}))
		// The same container and process, and the pod cgroup grown to
		// the sum of the limits.
		if c := tg.waitRunning(startTimeout, "resize", "main", 0); c.ID != main.ID || c.PID != main.PID {
			t.Errorf("main is %s pid %d after the resize, want %s pid %d", c.ID, c.PID, main.ID, main.PID)
		}
		tg.waitPodCgroup(root, "burstable", uid, "cpu.cfs_quota_us", "60000")
		tg.waitPodCgroup(root, "burstable", uid, "memory.limit_in_bytes", "167772160")
		v := tg.waitPod(startTimeout, "resize", "status with the resized resources", func(v *podview.View) error {
			cs, _ := containerStatusOf(v, "main")
			if cs.Resources == nil || cs.Resources.Limits[pod.ResourceCPU].String() != "400m" ||
				cs.AllocatedResources[pod.ResourceMemory].String() != "48Mi" {
				return fmt.Errorf("main: resources %+v, allocated %+v", cs.Resources, cs.AllocatedResources)
			}
			return nil
		})
		if cs, _ := containerStatusOf(&v, "main"); cs.RestartCount != 0 {
			t.Errorf("main restartCount = %d, want 0", cs.RestartCount)
		}
	})

	t.Run("memory limit lowered in place", func(t *testing.T) {
		tg := tg.forTest(t)
		tg.writeManifest("resize.yaml", manifest(
			cpuMem("300m", "40Mi", "400m", "80Mi", ""),
			cpuMem("100m", "32Mi", "200m", "64Mi", restartOnMemory)))
		tg.waitCgroup(main.PID, "memory.limit_in_bytes", "83886080")
		if c := tg.waitRunning(startTimeout, "resize", "main", 0); c.PID != main.PID {
			t.Errorf("main pid %d after the resize, want %d", c.PID, main.PID)
		}
		// The pod cgroup shrinks after its container.
		tg.waitPodCgroup(root, "burstable", uid, "memory.limit_in_bytes", "150994944")
	})

	t.Run("RestartContainer restarts that container only", func(t *testing.T) {
		tg := tg.forTest(t)
		tg.writeManifest("resize.yaml", manifest(
			cpuMem("300m", "40Mi", "400m", "80Mi", ""),
			cpuMem("100m", "32Mi", "200m", "72Mi", restartOnMemory)))
		again := tg.waitRunning(startTimeout, "resize", "other", 1)
		cgroupWants(t, again.PID, v2Files(map[string]string{"memory.limit_in_bytes": "75497472"}))
		v := tg.waitPod(startTimeout, "resize", "other's restartCount 1", func(v *podview.View) error {
			if cs, _ := containerStatusOf(v, "other"); cs.RestartCount != 1 {
				return fmt.Errorf("other restartCount %d", cs.RestartCount)
			}
			return nil
		})
		if cs, _ := containerStatusOf(&v, "main"); cs.RestartCount != 0 {
			t.Errorf("main restartCount = %d, want 0", cs.RestartCount)
		}
		if c := tg.waitRunning(startTimeout, "resize", "main", 0); c.PID != main.PID {
			t.Errorf("main pid %d, want %d: the other container's restart touched it", c.PID, main.PID)
		}
		if again.PID == other.PID {
			t.Errorf("other kept pid %d", other.PID)
		}
	})
}

func TestResizeQoSChangeRefused(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	manifest := func(res string) string {
		return podYAML{name: "resizeqos", grace: 2, containers: []ctrYAML{{name: "main", image: tg.image, script: idle, extra: res}}}.String()
	}
	tg.writeManifest("resizeqos.yaml", manifest(cpuMem("100m", "32Mi", "200m", "64Mi", "")))
	main := tg.waitRunning(startTimeout, "resizeqos", "main", 0)
	// Requests raised to the limits: Burstable to Guaranteed.
	tg.writeManifest("resizeqos.yaml", manifest(cpuMem("200m", "64Mi", "200m", "64Mi", "")))
	v := tg.waitPod(startTimeout, "resizeqos", "PodResizePending Infeasible", func(v *podview.View) error {
		c := conditionOf(v, pod.ConditionPodResizePending)
		if c.Status != "True" || c.Reason != "Infeasible" || !strings.Contains(c.Message, "QOS Class") {
			return fmt.Errorf("conditions %+v", v.Status.Conditions)
		}
		return nil
	})
	if v.Status.QOSClass != "Burstable" {
		t.Errorf("qosClass = %s, want Burstable", v.Status.QOSClass)
	}
	if c := tg.waitRunning(startTimeout, "resizeqos", "main", 0); c.PID != main.PID {
		t.Errorf("main pid %d, want %d", c.PID, main.PID)
	}
	cgroupWants(t, main.PID, v2Files(map[string]string{"cpu.shares": "102"}))
	out, stderr, code := tg.runCLI("describe", "resizeqos")
	if code != 0 || !strings.Contains(out, "Resize:") || !strings.Contains(out, "PodResizePending (Infeasible)") {
		t.Errorf("tug describe: exit %d, %s\n%s", code, stderr, out)
	}
}

func TestPodLevelResources(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	root := tg.cgroupRoot()
	tg.writeManifest("podlevel.yaml", podYAML{name: "podlevel", grace: 2,
		extra: "  resources:\n    requests: {cpu: 250m, memory: 64Mi}\n    limits: {cpu: 500m, memory: 128Mi}\n",
		containers: []ctrYAML{
			{name: "bounded", image: tg.image, script: idle},
			{name: "limited", image: tg.image, script: idle, extra: cpuMem("", "", "200m", "32Mi", "")},
		}}.String())
	tg.writeManifest("podlevelg.yaml", podYAML{name: "podlevelg", grace: 2,
		extra:      "  resources:\n    limits: {cpu: 300m, memory: 96Mi}\n",
		containers: []ctrYAML{{name: "main", image: tg.image, script: idle}},
	}.String())
	bounded := tg.waitPID("podlevel", "bounded")
	limited := tg.waitPID("podlevel", "limited")
	tg.waitRunning(startTimeout, "podlevelg", "main", 0)

	tests := []struct {
		pod, class, qos string
		v1, v2          map[string]string
	}{
		{"podlevel", "burstable", "Burstable",
			map[string]string{"cpu.cfs_quota_us": "50000", "cpu.shares": "256", "memory.limit_in_bytes": "134217728"},
			map[string]string{"cpu.max": "50000 100000", "memory.max": "134217728"}},
		{"podlevelg", "", "Guaranteed",
			map[string]string{"cpu.cfs_quota_us": "30000", "memory.limit_in_bytes": "100663296"},
			map[string]string{"cpu.max": "30000 100000", "memory.max": "100663296"}},
	}
	for _, tt := range tests {
		want := tt.v1
		if cgroupV2() {
			want = tt.v2
		}
		for file, value := range want {
			if got, err := podCgroupFile(root, tt.class, tg.uid(tt.pod), file); err != nil || got != value {
				t.Errorf("pod %s: cgroup %s = %q (%v), want %s", tt.pod, file, got, err, value)
			}
		}
		if v, err := tg.podView(tt.pod); err != nil || v.Status.QOSClass != tt.qos {
			t.Errorf("pod %s: qosClass = %q (%v), want %s", tt.pod, v.Status.QOSClass, err, tt.qos)
		}
	}
	// A container's own limits still apply; one without is bounded by
	// the pod cgroup only.
	if cgroupV2() {
		cgroupWants(t, limited.PID, map[string]string{"cpu.max": "20000 100000", "memory.max": "33554432"})
		cgroupWants(t, bounded.PID, map[string]string{"cpu.max": "max 100000", "memory.max": "max"})
	} else {
		cgroupWants(t, limited.PID, map[string]string{"cpu.cfs_quota_us": "20000", "memory.limit_in_bytes": "33554432"})
		cgroupWants(t, bounded.PID, map[string]string{"cpu.cfs_quota_us": "-1"})
	}
}
