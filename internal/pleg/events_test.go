package pleg

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"tug/internal/pod"
)

var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// ctr returns container id of pod uid in state st, as a listing reports it.
func ctr(uid, id string, st pod.RunState) pod.RuntimeContainer {
	c := pod.RuntimeContainer{ID: id, PodUID: uid, PodName: "p-" + uid, Namespace: "default", Name: "n-" + id, State: st, CreatedAt: t0}
	switch st {
	case pod.RunRunning:
		c.PID, c.StartedAt = 4242, t0.Add(time.Second)
	case pod.RunExited:
		c.StartedAt, c.FinishedAt = t0.Add(time.Second), t0.Add(time.Minute)
	}
	return c
}

func with(c pod.RuntimeContainer, f func(*pod.RuntimeContainer)) pod.RuntimeContainer {
	f(&c)
	return c
}

func byID(cs ...pod.RuntimeContainer) map[string]pod.RuntimeContainer {
	m := make(map[string]pod.RuntimeContainer, len(cs))
	for _, c := range cs {
		m[c.ID] = c
	}
	return m
}

func TestGenerateEventsTransitions(t *testing.T) {
	now := t0.Add(time.Hour)
	created := ctr("u1", "a", pod.RunCreated)
	running := ctr("u1", "a", pod.RunRunning)
	exited := with(ctr("u1", "a", pod.RunExited), func(c *pod.RuntimeContainer) { c.ExitCode = 3 })
	unknown := ctr("u1", "a", pod.RunUnknown)
	ev := func(typ EventType) Event {
		return Event{Type: typ, PodUID: "u1", ContainerID: "a", Name: "n-a", At: now}
	}
	died := func(code int, oom bool) Event {
		e := ev(ContainerDied)
		e.ExitCode, e.OOMKilled = code, oom
		return e
	}
	none := []Event(nil)
	tests := []struct {
		name     string
		old, new []pod.RuntimeContainer
		want     []Event
	}{
		{"nothing", nil, nil, none},
		{"absent to created", nil, []pod.RuntimeContainer{created}, []Event{ev(ContainerChanged)}},
		{"absent to running", nil, []pod.RuntimeContainer{running}, []Event{ev(ContainerStarted)}},
		{"absent to exited (created, started and died between relists)", nil, []pod.RuntimeContainer{exited}, []Event{died(3, false)}},
		{"absent to exited OOM-killed", nil, []pod.RuntimeContainer{with(exited, func(c *pod.RuntimeContainer) { c.ExitCode, c.OOMKilled = 137, true })}, []Event{died(137, true)}},
		{"absent to unknown", nil, []pod.RuntimeContainer{unknown}, []Event{ev(ContainerChanged)}},

		{"created unchanged", []pod.RuntimeContainer{created}, []pod.RuntimeContainer{created}, none},
		{"created to running", []pod.RuntimeContainer{created}, []pod.RuntimeContainer{running}, []Event{ev(ContainerStarted)}},
		{"created to exited", []pod.RuntimeContainer{created}, []pod.RuntimeContainer{exited}, []Event{died(3, false)}},
		{"created to unknown", []pod.RuntimeContainer{created}, []pod.RuntimeContainer{unknown}, []Event{ev(ContainerChanged)}},
		{"created to absent", []pod.RuntimeContainer{created}, nil, []Event{ev(ContainerRemoved)}},

		{"running unchanged", []pod.RuntimeContainer{running}, []pod.RuntimeContainer{running}, none},
		{"running, new PID", []pod.RuntimeContainer{running}, []pod.RuntimeContainer{with(running, func(c *pod.RuntimeContainer) { c.PID++ })}, []Event{ev(ContainerChanged)}},
		{"running, start time recorded late", []pod.RuntimeContainer{with(running, func(c *pod.RuntimeContainer) { c.StartedAt = time.Time{} })}, []pod.RuntimeContainer{running}, []Event{ev(ContainerChanged)}},
		{"running, OOM kill inside", []pod.RuntimeContainer{running}, []pod.RuntimeContainer{with(running, func(c *pod.RuntimeContainer) { c.OOMKilled = true })}, []Event{ev(ContainerChanged)}},
		{"running to exited", []pod.RuntimeContainer{running}, []pod.RuntimeContainer{exited}, []Event{died(3, false)}},
		{"running to exited 0", []pod.RuntimeContainer{running}, []pod.RuntimeContainer{with(exited, func(c *pod.RuntimeContainer) { c.ExitCode = 0 })}, []Event{died(0, false)}},
		{"running to unknown", []pod.RuntimeContainer{running}, []pod.RuntimeContainer{unknown}, []Event{ev(ContainerChanged)}},
		{"running to created", []pod.RuntimeContainer{running}, []pod.RuntimeContainer{created}, []Event{ev(ContainerChanged)}},
		{"running to absent", []pod.RuntimeContainer{running}, nil, []Event{died(255, false), ev(ContainerRemoved)}},

		{"exited unchanged", []pod.RuntimeContainer{exited}, []pod.RuntimeContainer{exited}, none},
		{"exited, same finish time in another location", []pod.RuntimeContainer{exited}, []pod.RuntimeContainer{with(exited, func(c *pod.RuntimeContainer) { c.FinishedAt = c.FinishedAt.In(time.FixedZone("X", 3600)) })}, none},
		{"exited, new exit code", []pod.RuntimeContainer{exited}, []pod.RuntimeContainer{with(exited, func(c *pod.RuntimeContainer) { c.ExitCode = 255 })}, []Event{ev(ContainerChanged)}},
		{"exited, OOM label recorded late", []pod.RuntimeContainer{exited}, []pod.RuntimeContainer{with(exited, func(c *pod.RuntimeContainer) { c.OOMKilled = true })}, []Event{ev(ContainerChanged)}},
		{"exited, new finish time", []pod.RuntimeContainer{exited}, []pod.RuntimeContainer{with(exited, func(c *pod.RuntimeContainer) { c.FinishedAt = c.FinishedAt.Add(time.Second) })}, []Event{ev(ContainerChanged)}},
		{"exited to running (task started again)", []pod.RuntimeContainer{exited}, []pod.RuntimeContainer{running}, []Event{ev(ContainerStarted)}},
		{"exited to absent", []pod.RuntimeContainer{exited}, nil, []Event{ev(ContainerRemoved)}},

		{"unknown unchanged", []pod.RuntimeContainer{unknown}, []pod.RuntimeContainer{unknown}, none},
		{"unknown to running", []pod.RuntimeContainer{unknown}, []pod.RuntimeContainer{running}, []Event{ev(ContainerStarted)}},
		{"unknown to exited", []pod.RuntimeContainer{unknown}, []pod.RuntimeContainer{exited}, []Event{died(3, false)}},
		{"unknown to absent", []pod.RuntimeContainer{unknown}, nil, []Event{died(255, false), ev(ContainerRemoved)}},
		{"OOM-flagged running to absent", []pod.RuntimeContainer{with(running, func(c *pod.RuntimeContainer) { c.OOMKilled = true })}, nil, []Event{died(255, true), ev(ContainerRemoved)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old, new := byID(tt.old...), byID(tt.new...)
			got := generateEvents(old, new, now)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("generateEvents =\n%+v\nwant\n%+v", got, tt.want)
			}
			// Pure: the inputs are left as they were.
			if !reflect.DeepEqual(old, byID(tt.old...)) || !reflect.DeepEqual(new, byID(tt.new...)) {
				t.Error("generateEvents changed its arguments")
			}
		})
	}
}

func TestGenerateEventsNilMaps(t *testing.T) {
	if got := generateEvents(nil, nil, t0); got != nil {
		t.Errorf("generateEvents(nil, nil) = %v", got)
	}
	if got := generateEvents(nil, byID(ctr("u", "a", pod.RunRunning)), t0); len(got) != 1 || got[0].Type != ContainerStarted {
		t.Errorf("from nil: %v", got)
	}
	if got := generateEvents(byID(ctr("u", "a", pod.RunExited)), nil, t0); len(got) != 1 || got[0].Type != ContainerRemoved {
		t.Errorf("to nil: %v", got)
	}
}

// The order is by pod UID, then container ID, whatever the map order; a
// container's Died comes before its Removed.
func TestGenerateEventsOrder(t *testing.T) {
	old := byID(
		ctr("u2", "z", pod.RunRunning),
		ctr("u2", "b", pod.RunRunning),
		ctr("u1", "y", pod.RunExited),
		ctr("u3", "a", pod.RunCreated),
	)
	new := byID(
		ctr("u2", "b", pod.RunExited),
		ctr("u1", "x", pod.RunRunning),
		ctr("u3", "a", pod.RunRunning),
		ctr("u0", "c", pod.RunCreated),
	)
	type key struct {
		uid, id string
		typ     EventType
	}
	want := []key{
		{"u0", "c", ContainerChanged},
		{"u1", "x", ContainerStarted},
		{"u1", "y", ContainerRemoved},
		{"u2", "b", ContainerDied},
		{"u2", "z", ContainerDied},
		{"u2", "z", ContainerRemoved},
		{"u3", "a", ContainerStarted},
	}
	for i := range 50 { // map iteration order varies between calls
		var got []key
		for _, e := range generateEvents(old, new, t0) {
			got = append(got, key{e.PodUID, e.ContainerID, e.Type})
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("run %d: order\n%v\nwant\n%v", i, got, want)
		}
	}
}

func TestEventTypeString(t *testing.T) {
	for typ, want := range map[EventType]string{
		ContainerStarted: "ContainerStarted", ContainerDied: "ContainerDied",
		ContainerRemoved: "ContainerRemoved", ContainerChanged: "ContainerChanged",
		0: "EventType(0)", 9: "EventType(9)",
	} {
		if got := typ.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(typ), got, want)
		}
	}
}

// listing returns n containers in n/5 pods (at least one), all running,
// as a relist of a busy device sees them.
func listing(n int) map[string]pod.RuntimeContainer {
	m := make(map[string]pod.RuntimeContainer, n)
	pods := max(n/5, 1)
	for i := range n {
		c := ctr(fmt.Sprintf("uid-%04d", i%pods), fmt.Sprintf("pod-%04d_app-%d_0", i%pods, i), pod.RunRunning)
		m[c.ID] = c
	}
	return m
}

// BenchmarkGenerateEvents diffs two listings of the same containers where
// one has died: the steady state of a relist every second.
func BenchmarkGenerateEvents(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("containers=%d", n), func(b *testing.B) {
			old, new := listing(n), listing(n)
			for id, c := range new {
				c.State, c.ExitCode, c.PID = pod.RunExited, 137, 0
				new[id] = c
				break
			}
			b.ReportAllocs()
			for b.Loop() {
				if evs := generateEvents(old, new, t0); len(evs) != 1 {
					b.Fatalf("%d events", len(evs))
				}
			}
		})
	}
}
