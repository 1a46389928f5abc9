package main

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"tug/internal/api"
	"tug/internal/pleg"
	"tug/internal/pod"
	"tug/internal/podconfig"
	"tug/internal/podlogs"
	"tug/internal/podview"
)

// newRegistry is the one metrics registry of the agent, served on /metrics:
// the Go runtime and process collectors, and whatever the components
// register on it (they are given it as their prometheus.Registerer).
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// registerLogMetrics exports the file log drivers' drops and the raw logs
// whose file system cannot punch holes (logs nil, the binary driver: both
// stay 0).
func registerLogMetrics(reg prometheus.Registerer, logs *podlogs.Pumps) {
	reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "tug_container_log_dropped_bytes_total",
			Help: "Container output bytes dropped because a container's unconverted raw output outgrew its bound (the container wrote faster than tug converts, or while tug was down).",
		}, func() float64 {
			if logs == nil {
				return 0
			}
			return float64(logs.DroppedBytes())
		}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "tug_container_log_no_punch_total",
			Help: "Container attempts whose raw output was found on a file system that cannot punch holes (their converted output stays on disk until they stop, and they are stopped at 64 MiB).",
		}, func() float64 {
			if logs == nil {
				return 0
			}
			return float64(logs.NoPunchFiles())
		}),
	)
}

// sourceStatus fills api.SourceLister: each configured source's readiness
// from the pod store, and a URL source's last success from its fetch state.
type sourceStatus struct {
	store   *podconfig.Store
	sources []string
	fetch   map[string]func() podview.FetchStatus
}

func (s sourceStatus) Sources() []api.SourceStatus {
	out := make([]api.SourceStatus, 0, len(s.sources))
	for _, name := range s.sources {
		st := api.SourceStatus{Name: name, Ready: s.store.Ready(name)}
		if f, ok := s.fetch[name]; ok {
			st.LastSuccess = f().LastSuccess
		}
		out = append(out, st)
	}
	return out
}

// AllReady reports whether every source has reported, and names those that
// have not.
func (s sourceStatus) AllReady() (bool, []string) {
	var missing []string
	for _, name := range s.sources {
		if !s.store.Ready(name) {
			missing = append(missing, name)
		}
	}
	return len(missing) == 0, missing
}

// wedgeCache is the test-only fault --test-fault-wedge-sync-loop: after
// the given time, the sync loop's next housekeeping (which reads All in the
// loop's goroutine) blocks for good, as a loop stuck on a hung call would.
type wedgeCache struct {
	*pleg.PLEG
	at time.Time
}

func (w wedgeCache) All() []pod.RuntimeContainer {
	if time.Now().After(w.at) {
		select {} // wedged on purpose
	}
	return w.PLEG.All()
}
