package prober

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"tug/internal/pod"
)

// metrics are the kubelet's prober metrics, plus the delay from a probe's
// due time to its result (the benchmark's latency).
type metrics struct {
	total    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	latency  *prometheus.HistogramVec
}

// latencyBuckets resolve the due-to-recorded latency finely below 50 ms,
// where the benchmark's target (p99 under 20 ms for httpGet and
// tcpSocket) lies, and coarsely above it, where exec probes land.
var latencyBuckets = []float64{
	0.0005, 0.001, 0.002, 0.003, 0.004, 0.005, 0.0075, 0.01, 0.0125, 0.015, 0.0175, 0.02,
	0.025, 0.03, 0.04, 0.05, 0.075, 0.1, 0.2, 0.5, 1, 2, 5,
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "prober_probe_total",
			Help: "Cumulative number of liveness, readiness or startup probes for a container, by result.",
		}, []string{"probe_type", "result", "container", "pod", "namespace"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "prober_probe_duration_seconds",
			Help:    "Duration in seconds of a liveness, readiness or startup probe, by result.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}, []string{"probe_type", "container", "pod", "namespace"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tug_prober_probe_latency_seconds",
			Help:    "Time from a probe's due time to its result recorded, by handler (exec, httpGet, tcpSocket, grpc).",
			Buckets: latencyBuckets,
		}, []string{"handler"}),
	}
	if reg != nil {
		reg.MustRegister(m.total, m.duration, m.latency)
	}
	return m
}

func (m *metrics) observe(p *pod.Pod, container string, kind Kind, handler string, res Result, took, latency time.Duration) {
	var name, ns string
	if p != nil {
		name, ns = p.Metadata.Name, p.Metadata.Namespace
	}
	m.total.WithLabelValues(string(kind), res.String(), container, name, ns).Inc()
	m.duration.WithLabelValues(string(kind), container, name, ns).Observe(took.Seconds())
	m.latency.WithLabelValues(handler).Observe(latency.Seconds())
}

// forget deletes the series of a container that no longer runs.
func (m *metrics) forget(p *pod.Pod, container string) {
	if p == nil {
		return
	}
	l := prometheus.Labels{"container": container, "pod": p.Metadata.Name, "namespace": p.Metadata.Namespace}
	m.total.DeletePartialMatch(l)
	m.duration.DeletePartialMatch(l)
}
