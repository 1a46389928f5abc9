package podplan

import (
	"strings"
	"testing"
	"time"

	"tug/internal/pod"
	"tug/internal/testutil"
)

// TestEvicted pins an evicted pod's plan: removed once, down for the
// retry period at least, then up again when the node's pressure lets it.
func TestEvicted(t *testing.T) {
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	const retry = 10 * time.Second
	admit := func() (bool, string) { return true, "" }
	refuse := func() (bool, string) { return false, "the node has MemoryPressure" }
	tests := []struct {
		name   string
		e      Eviction
		now    time.Time
		admits func() (bool, string)
		want   EvictionStep
	}{
		{"just evicted: removed, then down", Eviction{At: at}, at.Add(time.Second), admit,
			EvictionStep{Remove: true, Until: at.Add(retry)}},
		{"removed, within the retry period: down", Eviction{At: at, Done: true}, at.Add(5 * time.Second), admit,
			EvictionStep{Until: at.Add(retry)}},
		{"past the retry period, pressure gone: up again", Eviction{At: at, Done: true}, at.Add(11 * time.Second), admit,
			EvictionStep{}},
		{"past the retry period, still under pressure: down, asked again later", Eviction{At: at, Done: true}, at.Add(11 * time.Second), refuse,
			EvictionStep{Until: at.Add(21 * time.Second), Message: "the node has MemoryPressure"}},
		{"removed late, already past the period: removed and up again", Eviction{At: at}, at.Add(time.Minute), admit,
			EvictionStep{Remove: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			asked := false
			admits := func() (bool, string) { asked = true; return tt.admits() }
			got := Evicted(tt.e, tt.now, retry, admits)
			if got != tt.want {
				t.Errorf("Evicted = %+v, want %+v", got, tt.want)
			}
			if inPeriod := tt.now.Before(tt.e.At.Add(retry)); asked && inPeriod {
				t.Error("the eviction manager was asked within the retry period")
			}
		})
	}
}

// TestKillOrder pins the order a removed pod's containers stop in: the
// app containers and plain init containers first, together, then each
// sidecar in the reverse of its order.
func TestKillOrder(t *testing.T) {
	p := testutil.Pod("web", testutil.WithInit("proxy", "setup", "log"), testutil.WithApps("app", "worker"))
	always := pod.RestartAlways
	p.Spec.InitContainers[0].RestartPolicy = &always
	p.Spec.InitContainers[2].RestartPolicy = &always
	rec := func(name string, init bool) pod.RuntimeContainer {
		return pod.RuntimeContainer{ID: name, Name: name, Init: init}
	}
	tests := []struct {
		name string
		recs []pod.RuntimeContainer
		want string
	}{
		{"everything", []pod.RuntimeContainer{rec("proxy", true), rec("setup", true), rec("log", true), rec("app", false), rec("worker", false)},
			"setup app worker | log | proxy"},
		{"no sidecar running", []pod.RuntimeContainer{rec("app", false)}, "app"},
		{"nothing", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var waves []string
			for _, w := range KillOrder(p, tt.recs) {
				var names []string
				for _, r := range w {
					names = append(names, r.Name)
				}
				waves = append(waves, strings.Join(names, " "))
			}
			if got := strings.Join(waves, " | "); got != tt.want {
				t.Errorf("KillOrder = %q, want %q", got, tt.want)
			}
		})
	}
}
