//go:build e2e

package podruntime

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/oci"

	"tug/internal/pod"
	"tug/internal/podlabels"
)

// watch runs WatchEvents on e until the test ends and returns the channel
// its wake-ups arrive on.
func (e *env) watch(t *testing.T) <-chan struct{} {
	t.Helper()
	wakes := make(chan struct{}, 100)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- e.r.WatchEvents(ctx, func() {
			select {
			case wakes <- struct{}{}:
			default:
			}
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("WatchEvents = %v, want nil", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("WatchEvents did not return after cancel")
		}
	})
	return wakes
}

// waitWake waits up to d for a wake-up and reports whether one came.
func waitWake(wakes <-chan struct{}, d time.Duration) bool {
	select {
	case <-wakes:
		return true
	case <-time.After(d):
		return false
	}
}

func drainWakes(wakes <-chan struct{}) {
	for {
		select {
		case <-wakes:
		default:
			return
		}
	}
}

// Task events of tug's namespace wake the watcher; those of another
// namespace do not.
func TestE2EWatchEventsWakes(t *testing.T) {
	e := newEnv(t, false)
	other := newEnv(t, false)
	wakes := e.watch(t)
	time.Sleep(2 * watchUpAfter) // subscribed, and the wake of a new stream has come
	drainWakes(wakes)

	q := other.newPod(t, "sleep 30")
	other.start(t, q, 0, pod.Namespaces{})
	if waitWake(wakes, 2*time.Second) {
		t.Error("a task started in another namespace woke the watcher")
	}

	p := e.newPod(t, "sleep 30")
	id := e.start(t, p, 0, pod.Namespaces{})
	if !waitWake(wakes, 5*time.Second) {
		t.Fatal("no wake-up after a task started")
	}
	drainWakes(wakes)
	// A kill from outside, as the death benchmark does: the exit event wakes.
	rc := e.only(t, p)
	start := time.Now()
	if err := killPID(rc.PID); err != nil {
		t.Fatal(err)
	}
	if !waitWake(wakes, 5*time.Second) {
		t.Fatal("no wake-up after the task was killed")
	}
	t.Logf("kill to wake-up: %v", time.Since(start))
	if err := e.r.RemoveContainer(e.ctx, id); err != nil {
		t.Fatal(err)
	}
}

// A container killed by the kernel's OOM killer is reported OOMKilled by
// a listing, from the label WatchEvents records on the OOM event.
func TestE2EOOMKilled(t *testing.T) {
	e := newEnv(t, false)
	wakes := e.watch(t)
	time.Sleep(2 * watchUpAfter)

	// StartContainer sets no memory limit (that is qos's job through the
	// cgroup parent): make a container with tug's labels and a 16 MiB limit
	// directly. The shell keeps 64 MiB in a variable.
	p := e.newPod(t, "unused")
	c := &p.Spec.Containers[0]
	img, err := e.r.client.GetImage(e.ctx, e.image)
	if err != nil {
		t.Fatal(err)
	}
	id := podlabels.ContainerID(p, c.Name, 0)
	cont, err := e.r.client.NewContainer(e.ctx, id,
		containerd.WithImage(img),
		containerd.WithSnapshotter(e.r.cfg.Snapshotter),
		containerd.WithNewSnapshot(id, img),
		containerd.WithNewSpec(oci.WithImageConfig(img),
			oci.WithProcessArgs("sh", "-c", `x=$(head -c 67108864 /dev/zero | tr '\0' a); echo survived`),
			oci.WithMemoryLimit(16<<20)),
		containerd.WithContainerLabels(podlabels.ForContainer(p, c, false, 0, img.Target().Digest.String(), "")),
		containerd.WithRuntime(RuncRuntime, nil),
	)
	if err != nil {
		t.Fatal(err)
	}
	task, err := cont.NewTask(e.ctx, cio.NullIO)
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Start(e.ctx); err != nil {
		t.Fatal(err)
	}

	deadline := time.Now().Add(20 * time.Second)
	for {
		rc := e.only(t, p)
		if rc.State == pod.RunExited && rc.OOMKilled {
			t.Logf("exited %d, OOMKilled", rc.ExitCode)
			if rc.ExitCode != 137 {
				t.Errorf("exit code %d, want 137 (SIGKILL)", rc.ExitCode)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no OOM kill reported: %+v", rc)
		}
		waitWake(wakes, 500*time.Millisecond)
	}
	labels, err := cont.Labels(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if labels[podlabels.LabelOOMKilled] != "true" {
		t.Errorf("label %s = %q, want true", podlabels.LabelOOMKilled, labels[podlabels.LabelOOMKilled])
	}
	if err := e.r.RemoveContainer(e.ctx, id); err != nil {
		t.Fatal(err)
	}
}

// killPID sends SIGKILL to a container's process from the host.
func killPID(pid uint32) error {
	if pid == 0 {
		return errors.New("no PID")
	}
	return syscall.Kill(int(pid), syscall.SIGKILL)
}
