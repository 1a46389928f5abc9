//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestShimGrouping runs a pod with two init containers and two app
// containers, and a second pod, under each --shim-grouping: the pod's
// containers share one containerd shim, the other pod has its own (pod) or
// shares it (node). A container that dies while tug is killed is restarted
// by the next tug into the shim its pod still has; killing the shim takes
// down exactly the containers it served, and tug restarts them into a new
// shim.
func TestShimGrouping(t *testing.T) {
	t.Parallel()
	for _, grouping := range []string{"pod", "node"} {
		t.Run(grouping, func(t *testing.T) {
			tg := startTug(t, tugOpts{args: []string{"--shim-grouping=" + grouping, "--crash-loop-back-off-initial=100ms"}})
			tg.writeManifest("grp.yaml", podYAML{name: "grp",
				init: []ctrYAML{
					{name: "first", image: tg.image, script: "echo first"},
					{name: "second", image: tg.image, script: "echo second"},
				},
				containers: []ctrYAML{
					{name: "a", image: tg.image, script: idle},
					{name: "b", image: tg.image, script: idle},
				},
			}.String())
			tg.writeManifest("other.yaml", shPod("other", tg.image, idle))
			a := tg.waitRunning(startTimeout, "grp", "a", 0)
			b := tg.waitRunning(startTimeout, "grp", "b", 0)
			other := tg.waitRunning(startTimeout, "other", "main", 0)
			shim := shimOf(t, a.PID)
			if s := shimOf(t, b.PID); s != shim {
				t.Fatalf("a runs under shim %d, b under %d: want one shim per pod", shim, s)
			}
			otherShim := shimOf(t, other.PID)
			if (otherShim == shim) != (grouping == "node") {
				t.Fatalf("pod grp's shim is %d, pod other's %d: wrong for --shim-grouping=%s", shim, otherShim, grouping)
			}

			// a dies while no tug runs; the next tug adopts b and restarts a
			// into the shim that b keeps alive.
			tg.Kill()
			if err := unix.Kill(int(a.PID), unix.SIGKILL); err != nil {
				t.Fatal(err)
			}
			tg.Start()
			a1 := tg.waitRunning(startTimeout, "grp", "a", 1)
			if s := shimOf(t, a1.PID); s != shim {
				t.Errorf("a restarted under shim %d, want the pod's shim %d", s, shim)
			}
			if b1, ok, err := tg.container(tg.uid("grp"), "b"); err != nil || !ok || b1.PID != b.PID {
				t.Errorf("b after the restart of tug: %v (found %v, %v), want it untouched (pid %d)", b1, ok, err, b.PID)
			}

			// A shim crash takes down what it served, and only that.
			if err := unix.Kill(shim, unix.SIGKILL); err != nil {
				t.Fatal(err)
			}
			a2 := tg.waitRunning(startTimeout, "grp", "a", 2)
			b2 := tg.waitRunning(startTimeout, "grp", "b", 1)
			newShim := shimOf(t, a2.PID)
			if s := shimOf(t, b2.PID); s != newShim || newShim == shim {
				t.Errorf("after the shim crash a runs under %d, b under %d; want one new shim (the old was %d)", newShim, s, shim)
			}
			if grouping == "node" {
				o1 := tg.waitRunning(startTimeout, "other", "main", 1)
				if s := shimOf(t, o1.PID); s != newShim {
					t.Errorf("after the shim crash other runs under %d, want the new node shim %d", s, newShim)
				}
				return
			}
			if o, ok, err := tg.container(tg.uid("other"), "main"); err != nil || !ok || o.PID != other.PID {
				t.Errorf("other after grp's shim crashed: %v (found %v, %v), want it untouched (pid %d)", o, ok, err, other.PID)
			}
		})
	}
}

// shimOf returns the PID of the containerd shim that runs the container
// whose init process is pid: its parent, which must be a containerd shim.
func shimOf(t *testing.T, pid uint32) int {
	t.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command name (in parentheses): state, ppid.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		t.Fatalf("/proc/%d/stat: %v", pid, err)
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", ppid))
	if err != nil || !strings.HasPrefix(filepath.Base(exe), "containerd-shim") {
		t.Fatalf("the parent of container process %d is %d (%s, %v), not a containerd shim", pid, ppid, exe, err)
	}
	return ppid
}
