//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"tug/internal/pod"
	"tug/internal/podview"
)

// evictionTimeout covers the eviction manager's 10 s period, the pod's
// removal and the 10 s an evicted pod stays down at least.
const evictionTimeout = 60 * time.Second

// TestEmptyDirSizeLimitEviction: a pod that writes past its disk emptyDir's
// sizeLimit is evicted (Failed/Evicted with the kubelet's message, its
// containers and emptyDir removed) and, still wanted by its source, is
// started again with an empty emptyDir. A marker on a hostPath makes it
// write only the first time.
func TestEmptyDirSizeLimitEviction(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	marker := filepath.Join(tg.base, "marker")
	if err := os.MkdirAll(marker, 0o755); err != nil {
		t.Fatal(err)
	}
	script := `if [ ! -f /marker/wrote ]; then touch /marker/wrote; dd if=/dev/zero of=/scratch/big bs=1024 count=2048; fi; ls /scratch; ` + idle
	tg.writeManifest("filler.yaml", podYAML{name: "filler",
		containers: []ctrYAML{{name: "main", image: tg.image, script: script, mounts: []mountYAML{
			{name: "scratch", path: "/scratch"}, {name: "marker", path: "/marker"},
		}}},
		volumes: []volYAML{{"scratch", "emptyDir: {sizeLimit: 1Mi}"}, hostPathVol("marker", marker, "Directory")},
	}.String())
	tg.waitEvictedAndBack("filler", `Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". `)
	tg.waitPod(startTimeout, "filler", "Running", func(v *podview.View) error {
		if v.Status.Phase != pod.PhaseRunning || v.Status.Reason != "" {
			return fmt.Errorf("status %s/%s %q", v.Status.Phase, v.Status.Reason, v.Status.Message)
		}
		return nil
	})
	tg.waitForOutput(startTimeout, "starting evicted pod again")
	big := filepath.Join(tg.emptyDir("filler", "scratch"), "big")
	if _, err := os.Stat(big); !os.IsNotExist(err) {
		t.Errorf("the file that outgrew the emptyDir is still there after the restart: %v", err)
	}
	if _, err := os.Stat(filepath.Dir(big)); err != nil {
		t.Errorf("the restarted pod has no emptyDir: %v", err)
	}
}

// TestMemoryPressureEvictsBestEffortFirst: with a memory.available
// threshold above what the node has (100Gi: always under pressure), the
// first pod evicted is the BestEffort one, whose usage exceeds its zero
// request, not the Guaranteed one within its request (named to sort first,
// so that a ranking that ignored usage would pick it); the evicted pod
// shows the kubelet's message and is not started again while the node is
// under MemoryPressure. Both pods run before the threshold is set (tug
// restarted with it adopts them): on a slow host (the cgroup v2 guest
// under TCG) a pass while a container is still being created would rank
// it first for its missing stats.
func TestMemoryPressureEvictsBestEffortFirst(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{args: []string{"--eviction-hard", "none"}})
	tg.writeManifest("a-guaranteed.yaml", resourcesPod("a-guaranteed", tg.image, idle,
		"        limits: {cpu: 100m, memory: 64Mi}\n", "Always"))
	tg.writeManifest("z-besteffort.yaml", shPod("z-besteffort", tg.image, idle))
	guaranteed := tg.waitRunning(startTimeout, "a-guaranteed", "main", 0)
	tg.waitRunning(startTimeout, "z-besteffort", "main", 0)
	if err := tg.Stop(); err != nil {
		t.Fatal(err)
	}
	tg.args = []string{"--eviction-hard", "memory.available<100Gi"}
	tg.Start()
	v := tg.waitPod(evictionTimeout, "z-besteffort", "Failed/Evicted", func(v *podview.View) error {
		if v.Status.Phase != pod.PhaseFailed || v.Status.Reason != "Evicted" {
			return fmt.Errorf("status %s/%s %q", v.Status.Phase, v.Status.Reason, v.Status.Message)
		}
		return nil
	})
	// The message names the container and its working set, read from its
	// cgroup (cgstats: cgroup v1 or v2) under MemoryPressure; the ranking
	// used the pod cgroup's (qos.PodUsage).
	if want := regexp.MustCompile(`^The node was low on resource: memory\. Threshold quantity: 100Gi, available: \d+[KMG]i\. Container main was using \d+(Ki|Mi)?, request is 0, has larger consumption of memory\. $`); !want.MatchString(v.Status.Message) {
		t.Errorf("message %q, want it to match %s", v.Status.Message, want)
	}
	// The Evicted event, in tug events.
	evOut, err := exec.Command(tugBin, "events", "--socket", tg.socketPath(), staticName("z-besteffort")).CombinedOutput()
	if err != nil || findLine(string(evOut), "Warning", "Evicted", "pod/"+staticName("z-besteffort"), "The node was low on resource: memory.") == "" {
		t.Errorf("tug events z-besteffort: no Warning Evicted line (%v)\n%s", err, evOut)
	}
	g, err := tg.podView("a-guaranteed")
	if err != nil {
		t.Fatal(err)
	}
	if g.Status.Phase != pod.PhaseRunning {
		t.Errorf("the Guaranteed pod was evicted before the BestEffort one: %s/%s %q", g.Status.Phase, g.Status.Reason, g.Status.Message)
	}
	if c, ok, err := tg.container(tg.uid("a-guaranteed"), "main"); err != nil || !ok || c.PID != guaranteed.PID {
		t.Errorf("the Guaranteed pod's container changed: %v %v %v", c, ok, err)
	}
	// The node condition, in GET /node and tug node.
	node, err := tg.api().Node(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	conds := map[string]string{}
	for _, c := range node.Status.Conditions {
		conds[c.Type] = c.Status + "/" + c.Reason
	}
	if want := map[string]string{"MemoryPressure": "True/KubeletHasInsufficientMemory", "DiskPressure": "False/KubeletHasNoDiskPressure", "PIDPressure": "False/KubeletHasSufficientPID", "ClockBehind": "False/ClockSane"}; !maps.Equal(conds, want) || node.Metadata.Name != "e2e" {
		t.Errorf("GET /node: %s %v, want e2e %v", node.Metadata.Name, conds, want)
	}
	out, stderr, code := tg.runCLI("node")
	if code != 0 || findLine(out, "MemoryPressure", "True", "KubeletHasInsufficientMemory", "kubelet has insufficient memory available") == "" {
		t.Errorf("tug node = %d, %q, stderr %q: no MemoryPressure True line", code, out, stderr)
	}
	// Under MemoryPressure a BestEffort pod is not admitted again.
	tg.waitPod(evictionTimeout, "z-besteffort", "held by the node condition", func(v *podview.View) error {
		if v.Status.Reason != "Evicted" || v.Status.Message != "The node had condition: [MemoryPressure]. " {
			return fmt.Errorf("status %s/%s %q", v.Status.Phase, v.Status.Reason, v.Status.Message)
		}
		return nil
	})
}

// TestEphemeralStorageLimitEviction: a container writing past its
// ephemeral-storage limit into its own writable layer gets its pod
// evicted with the kubelet's message, and the pod starts again fresh.
func TestEphemeralStorageLimitEviction(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	marker := filepath.Join(tg.base, "marker")
	if err := os.MkdirAll(marker, 0o755); err != nil {
		t.Fatal(err)
	}
	script := `if [ ! -f /marker/wrote ]; then touch /marker/wrote; dd if=/dev/zero of=/big bs=1024 count=3072; fi; ` + idle
	tg.writeManifest("writer.yaml", podYAML{name: "writer",
		containers: []ctrYAML{{name: "main", image: tg.image, script: script, mounts: []mountYAML{{name: "marker", path: "/marker"}},
			extra: "      resources:\n        limits: {ephemeral-storage: 2Mi}\n"}},
		volumes: []volYAML{hostPathVol("marker", marker, "Directory")},
	}.String())
	tg.waitEvictedAndBack("writer", `Container main exceeded its local ephemeral storage limit "2Mi". `)
}

// waitEvictedAndBack waits for the pod named name (its one container
// "main" running) to be evicted with message msg and its containers
// removed, then for it to run again: a new attempt 0.
func (tg *tug) waitEvictedAndBack(name, msg string) {
	tg.t.Helper()
	first := tg.waitRunning(startTimeout, name, "main", 0)
	tg.waitPod(evictionTimeout, name, "Failed/Evicted", func(v *podview.View) error {
		if v.Status.Phase != pod.PhaseFailed || v.Status.Reason != "Evicted" || v.Status.Message != msg {
			return fmt.Errorf("status %s/%s %q", v.Status.Phase, v.Status.Reason, v.Status.Message)
		}
		return nil
	})
	tg.waitFor(evictionTimeout, "the evicted pod's containers to be removed", func() (bool, error) {
		cs, err := tg.podContainers(tg.uid(name))
		return err == nil && len(cs) == 0, err
	})
	again := tg.waitRunning(evictionTimeout, name, "main", 0)
	if again.PID == first.PID {
		tg.t.Errorf("pod %s was not started again: %v", name, again)
	}
}
