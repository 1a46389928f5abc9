//go:build e2e

package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"golang.org/x/sys/unix"
)

// Bounds for things tug does. A first start includes unpacking the image.
const (
	startTimeout  = 60 * time.Second
	logTimeout    = 10 * time.Second
	removeTimeout = 30 * time.Second
)

func TestStartFromManifest(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	tg.writeManifest("start.yaml", shPod("start", tg.image, "echo hello-from-tug; hostname; "+idle))

	c := tg.waitRunning(startTimeout, "start", "main", 0)
	tg.waitLog(logTimeout, "start", "main", 0, "hello-from-tug", staticName("start"))
	raw, err := readLog(tg.podLogGlob("start"), "main", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^\S+ stdout F hello-from-tug$`).MatchString(raw) {
		t.Errorf("log has no CRI line `<time> stdout F hello-from-tug`:\n%s", raw)
	}

	// The task runs in the pod's pinned namespaces, not in the host's.
	uid := tg.uid("start")
	for _, kind := range []string{"net", "ipc", "uts"} {
		t.Run(kind, func(t *testing.T) {
			got, err := procNS(c.PID, kind)
			if err != nil {
				t.Fatal(err)
			}
			pin := filepath.Join(tg.runDir, "ns", uid, kind)
			pinned, err := pinnedNS(pin, kind)
			if err != nil {
				t.Fatalf("pinned namespace: %v", err)
			}
			host, err := hostNS(kind)
			if err != nil {
				t.Fatal(err)
			}
			if got != pinned {
				t.Errorf("task %d is in %s, want the one pinned at %s (%s)", c.PID, got, pin, pinned)
			}
			if got == host {
				t.Errorf("task %d is in the host's %s namespace %s", c.PID, kind, host)
			}
		})
	}
}

func TestEditRecreatesOnlyChangedContainer(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	manifest := func(bScript string) string {
		return podYAML{name: "edit", containers: []ctrYAML{
			{name: "a", image: tg.image, script: "echo a; " + idle, asArgs: true},
			{name: "b", image: tg.image, script: bScript, asArgs: true},
		}}.String()
	}
	tg.writeManifest("edit.yaml", manifest("echo b-v1; "+idle))
	a0 := tg.waitRunning(startTimeout, "edit", "a", 0)
	b0 := tg.waitRunning(startTimeout, "edit", "b", 0)

	tg.writeManifest("edit.yaml", manifest("echo b-v2; "+idle))
	b1 := tg.waitRunning(removeTimeout, "edit", "b", 1)
	tg.waitLog(logTimeout, "edit", "b", 1, "b-v2")
	if b1.PID == b0.PID || b1.ID == b0.ID {
		t.Errorf("b was not recreated: before %v, after %v", b0, b1)
	}
	cs, err := tg.podContainers(tg.uid("edit"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.ID == b0.ID && c.Status == containerd.Running {
			t.Errorf("the old b still runs: %v", c)
		}
	}
	a, ok, err := tg.container(tg.uid("edit"), "a")
	if err != nil || !ok {
		t.Fatalf("container a: found %v, %v", ok, err)
	}
	if a.ID != a0.ID || a.PID != a0.PID || a.Status != containerd.Running {
		t.Errorf("a changed although its spec did not: before %v, after %v", a0, a)
	}
}

// cachePod is a pod whose container writes to a tmpfs emptyDir, "cache",
// and then idles: a pod with every kind of thing a removal must clean up.
func cachePod(name, image string) string {
	return podYAML{name: name,
		containers: []ctrYAML{{name: "main", image: image, script: "echo data > /cache/f && echo wrote; " + idle,
			mounts: []mountYAML{{name: "cache", path: "/cache"}}}},
		volumes: []volYAML{memoryVol("cache")},
	}.String()
}

func TestRemoveCleansEverything(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	tg.writeManifest("gone.yaml", cachePod("gone", tg.image))
	tg.waitRunning(startTimeout, "gone", "main", 0)
	tg.waitLog(logTimeout, "gone", "main", 0, "wrote")

	// What must go exists now, so that its absence later means something.
	left := tg.podLeftovers("gone")
	if s := left(); len(missingLeftovers(s)) > 0 || !strings.Contains(strings.Join(s, "\n"), "tmpfs on ") {
		t.Fatalf("the pod lacks %v of what must go; it has: %s", missingLeftovers(s), strings.Join(s, "; "))
	}

	if err := os.Remove(tg.manifestPath("gone.yaml")); err != nil {
		t.Fatal(err)
	}
	tg.waitFor(removeTimeout, "the removed pod to be cleaned up", func() (bool, error) {
		if s := left(); len(s) > 0 {
			return false, fmt.Errorf("still there: %s", strings.Join(s, "; "))
		}
		return true, nil
	})
}

// exists returns path if it exists and "" if it does not.
func exists(path string) (string, error) {
	_, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	return path, err
}

// mountsLeft describes the mounts at or below dir, "" when there are none.
func mountsLeft(dir string) (string, error) {
	ms, err := mountsUnder(dir)
	var s []string
	for _, m := range ms {
		s = append(s, m.fstype+" on "+m.point)
	}
	return strings.Join(s, ", "), err
}

func TestInitContainersBeforeApps(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	work := []mountYAML{{name: "work", path: "/work"}}
	tg.writeManifest("init.yaml", podYAML{name: "init",
		init: []ctrYAML{
			{name: "first", image: tg.image, script: "sleep 1; echo first > /work/out", mounts: work},
			{name: "second", image: tg.image, script: "echo second >> /work/out", mounts: work},
		},
		containers: []ctrYAML{{name: "app", image: tg.image, script: "cat /work/out; " + idle, mounts: work}},
		volumes:    []volYAML{emptyVol("work")},
	}.String())

	app := tg.waitRunning(startTimeout, "init", "app", 0)
	lines := tg.waitLog(logTimeout, "init", "app", 0, "first", "second")
	if i, j := indexLine(lines, "stdout", "first"), indexLine(lines, "stdout", "second"); i != 0 || j != 1 {
		t.Errorf("app log = %q, want the lines first, second in this order", lines)
	}

	// Each init container exited 0 before the next container was created
	// (and so before it started).
	order := []string{"first", "second", "app"}
	byName := map[string]ctr{"app": app}
	for _, name := range order[:2] {
		c, ok, err := tg.container(tg.uid("init"), name)
		if err != nil || !ok {
			t.Fatalf("init container %s: found %v, %v", name, ok, err)
		}
		byName[name] = c
	}
	for i, name := range order[:2] {
		c, next := byName[name], byName[order[i+1]]
		code, at, ok := c.exit()
		switch {
		case !ok:
			t.Errorf("%s: no exit recorded: %v", name, c)
		case code != 0:
			t.Errorf("%s exited with %d, want 0", name, code)
		case !at.Before(next.CreatedAt):
			t.Errorf("%s exited at %v, not before %s was created at %v", name, at, order[i+1], next.CreatedAt)
		}
	}
}

func TestStopLeavesPodsRunning(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	tg.writeManifest("stay.yaml", shPod("stay", tg.image, idle))
	c0 := tg.waitRunning(startTimeout, "stay", "main", 0)

	if err := tg.Stop(); err != nil {
		t.Fatalf("tug did not stop cleanly on SIGTERM: %v", err)
	}
	assertUnchanged := func(when string) {
		t.Helper()
		cs, err := tg.podContainers(tg.uid("stay"))
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) != 1 || cs[0].ID != c0.ID || cs[0].PID != c0.PID || cs[0].Status != containerd.Running {
			t.Fatalf("%s: containers = %v, want only %v, still running", when, cs, c0)
		}
		if err := unix.Kill(int(c0.PID), 0); err != nil {
			t.Fatalf("%s: process %d: %v", when, c0.PID, err)
		}
	}
	assertUnchanged("after tug stopped")

	tg.Start()
	// The new tug adopts the pod (its API shows it Running, the container
	// not restarted), then resyncs it at least once: after that nothing
	// must have changed.
	tg.waitAllRunning(logTimeout, []string{"stay"})
	time.Sleep(syncFrequency + time.Second)
	if !tg.running() {
		t.Fatalf("the restarted tug exited: %v", tg.waitErr)
	}
	assertUnchanged("after tug restarted and synced")
}
