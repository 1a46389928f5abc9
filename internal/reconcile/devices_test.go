package reconcile

import (
	"context"
	"slices"
	"testing"
	"time"

	"tug/internal/pod"
	"tug/internal/podplan"
	"tug/internal/podstatus"
)

// fakeDevices gives container "dev" a device, gone while gone is set.
type fakeDevices struct{ gone bool }

func (f *fakeDevices) Gone(_ *pod.Pod, c *pod.Container) ([]string, bool) {
	if c.Name != "dev" {
		return nil, false
	}
	if f.gone {
		return []string{"/dev/ttyUSB0 of tug.io/serial"}, true
	}
	return nil, true
}

func (f *fakeDevices) Name() string { return "devices" }

// Facts fills f from Gone, as devices.Manager does.
func (f *fakeDevices) Facts(p *pod.Pod, facts *podplan.Facts) { facts.AddDevices(p, f.Gone) }

// fakeEvents records events' reasons.
type fakeEvents struct{ reasons []string }

func (f *fakeEvents) Event(_ *pod.Pod, _, _, reason, _ string) { f.reasons = append(f.reasons, reason) }

// TestDeviceGone: while the device of container dev is gone, dev is not
// restarted when it exits (it waits with reason DeviceUnavailable, however
// often the pod is synced), the other container is, the pod's
// DevicesReady condition is False with the device named and one Warning
// event tells; once the device is back dev runs again and the condition
// is True.
func TestDeviceGone(t *testing.T) {
	ctx := context.Background()
	f := &fakeRuntime{}
	s := newTestSyncer(f, &fakeSandbox{})
	devs, rec := &fakeDevices{}, &fakeEvents{}
	s.hooks, s.rec = sortHooks([]Hook{devs}), rec
	p := testPod(pod.RestartAlways, nil, []string{"dev", "plain"})
	status := func() pod.Status {
		var st pod.Status
		s.notes.with(p.Metadata.UID, time.Now(), func(n *podNotes) {
			recs, _ := f.PodContainers(ctx, p.Metadata.UID)
			st = computeStatus(p, recs, *n, time.Now())
		})
		return st
	}
	devicesReady := func(st pod.Status) pod.Condition {
		for _, c := range st.Conditions {
			if c.Type == pod.ConditionDevicesReady {
				return c
			}
		}
		return pod.Condition{}
	}
	if _, err := s.syncPod(ctx, ctx, p); err != nil {
		t.Fatal(err)
	}
	if c := devicesReady(status()); c.Status != "True" {
		t.Fatalf("DevicesReady %+v with the device present, want True", c)
	}

	devs.gone = true
	f.exit("dev", 1)
	f.exit("plain", 1)
	for range 3 {
		if _, err := s.syncPod(ctx, ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	st := status()
	if c := devicesReady(st); c.Status != "False" || c.Reason != podstatus.ReasonDeviceUnavailable || c.Message == "" {
		t.Errorf("DevicesReady %+v with the device gone, want False %s with a message", c, podstatus.ReasonDeviceUnavailable)
	}
	for _, cs := range st.ContainerStatuses {
		switch {
		case cs.Name == "dev" && (cs.RestartCount != 0 || cs.State.Waiting == nil || cs.State.Waiting.Reason != podstatus.ReasonDeviceUnavailable):
			t.Errorf("dev: restartCount %d, state %+v; want 0, waiting %s", cs.RestartCount, cs.State, podstatus.ReasonDeviceUnavailable)
		case cs.Name == "plain" && cs.RestartCount != 1:
			t.Errorf("plain: restartCount %d, want 1", cs.RestartCount)
		}
	}
	if n := countOf(rec.reasons, podstatus.ReasonDeviceUnavailable); n != 1 {
		t.Errorf("%d %s events in %v, want 1", n, podstatus.ReasonDeviceUnavailable, rec.reasons)
	}

	devs.gone = false
	if _, err := s.syncPod(ctx, ctx, p); err != nil {
		t.Fatal(err)
	}
	st = status()
	if c := devicesReady(st); c.Status != "True" {
		t.Errorf("DevicesReady %+v with the device back, want True", c)
	}
	if cs := st.ContainerStatuses[0]; cs.State.Running == nil || cs.RestartCount != 1 {
		t.Errorf("dev with its device back: restartCount %d, state %+v; want running, 1", cs.RestartCount, cs.State)
	}
	if !slices.Contains(rec.reasons, reasonDeviceAvailable) {
		t.Errorf("no %s event in %v", reasonDeviceAvailable, rec.reasons)
	}
}

func countOf(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}
