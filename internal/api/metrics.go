package api

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"tug/internal/pod"
	"tug/internal/podview"
)

// phases are the pod phases /metrics always reports, so that every series
// exists even at zero.
var phases = []pod.Phase{pod.PhasePending, pod.PhaseRunning, pod.PhaseSucceeded, pod.PhaseFailed, pod.PhaseUnknown}

// SourceStatus is what /metrics reports of one manifest source.
type SourceStatus struct {
	Name string
	// Ready is true once the source has reported its pods at least once.
	Ready bool
	// LastSuccess is when the source last read its manifests without
	// error; zero when unknown (the series is then left out).
	LastSuccess time.Time
}

// SourceLister lists the configured manifest sources; the agent implements
// it. It must be safe for concurrent use.
type SourceLister interface {
	Sources() []SourceStatus
}

// registry returns the registry /metrics serves, registering the server's
// own collectors on it the first time.
func (s *Server) registry() *prometheus.Registry {
	s.metricsOnce.Do(func() {
		if s.Registry == nil {
			s.Registry = prometheus.NewRegistry()
		}
		s.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubelet_http_requests_total",
			Help: "Number of the API's HTTP requests, by method, path pattern, server type (socket or health) and whether they stream.",
		}, []string{"method", "path", "server_type", "long_running"})
		s.Registry.MustRegister(s.requests, newStatusCollector(s), newStateCollector(s))
	})
	return s.Registry
}

func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	promhttp.HandlerFor(s.registry(), promhttp.HandlerOpts{ErrorLog: slogPrinter{s}}).ServeHTTP(w, r)
}

// slogPrinter hands promhttp's errors (a collector that failed) to the
// server's log.
type slogPrinter struct{ s *Server }

func (p slogPrinter) Println(v ...any) {
	p.s.logger().Warn("serve metrics", "err", fmt.Sprint(v...))
}

// counted wraps a mux so that each request counts in
// kubelet_http_requests_total under its route pattern (never the raw path:
// pod names would make one series per pod).
func (s *Server) counted(serverType string, mux *http.ServeMux) http.Handler {
	s.registry() // creates s.requests
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, pattern := mux.Handler(r)
		path := pattern
		if _, p, ok := strings.Cut(pattern, " "); ok {
			path = p
		}
		if path == "" {
			path = "other"
		}
		long := "false"
		if r.URL.Query().Get("follow") == "true" || r.URL.Query().Get("watch") == "true" || strings.HasSuffix(path, "/exec") {
			long = "true"
		}
		s.requests.WithLabelValues(r.Method, path, serverType, long).Inc()
		mux.ServeHTTP(w, r)
	})
}

// statusCollector computes tug's status gauges at each scrape from the
// server's StatusSource and SourceLister, and observes
// kubelet_pod_start_duration_seconds once per pod, the first time a scrape
// finds it with every container running.
type statusCollector struct {
	s *Server

	pods, manifests, manifestErrors, sourceReady, sourceSuccess *prometheus.Desc
	startDuration                                               prometheus.Histogram

	mu      sync.Mutex
	started map[string]bool // UIDs already observed; pruned to the current pods
}

func newStatusCollector(s *Server) *statusCollector {
	return &statusCollector{
		s:              s,
		pods:           prometheus.NewDesc("tug_pods", "Pods tug manages, by phase.", []string{"phase"}, nil),
		manifests:      prometheus.NewDesc("tug_manifests", "Manifest files tug reads, broken ones included.", nil, nil),
		manifestErrors: prometheus.NewDesc("tug_manifest_errors", "Manifest files whose last version could not be used.", nil, nil),
		sourceReady:    prometheus.NewDesc("tug_source_ready", "1 once the manifest source has reported its pods, else 0.", []string{"source"}, nil),
		sourceSuccess:  prometheus.NewDesc("tug_source_last_success_timestamp_seconds", "When the manifest source last read its manifests without error (Unix time).", []string{"source"}, nil),
		startDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "kubelet_pod_start_duration_seconds",
			Help:    "Duration in seconds from tug first seeing a pod to all its containers running (observed at the first scrape after).",
			Buckets: []float64{0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800},
		}),
		started: map[string]bool{},
	}
}

func (c *statusCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.pods, c.manifests, c.manifestErrors, c.sourceReady, c.sourceSuccess} {
		ch <- d
	}
	c.startDuration.Describe(ch)
}

func (c *statusCollector) Collect(ch chan<- prometheus.Metric) {
	pods := c.s.pods()
	byPhase := make(map[pod.Phase]int)
	for _, v := range pods {
		p := v.Status.Phase
		if p == "" {
			p = pod.PhaseUnknown
		}
		byPhase[p]++
	}
	for _, p := range phases {
		ch <- prometheus.MustNewConstMetric(c.pods, prometheus.GaugeValue, float64(byPhase[p]), string(p))
	}
	manifests := c.s.manifests()
	broken := 0
	for _, m := range manifests {
		if m.Error != "" {
			broken++
		}
	}
	ch <- prometheus.MustNewConstMetric(c.manifests, prometheus.GaugeValue, float64(len(manifests)))
	ch <- prometheus.MustNewConstMetric(c.manifestErrors, prometheus.GaugeValue, float64(broken))
	if c.s.Sources != nil {
		for _, src := range c.s.Sources.Sources() {
			ready := 0.0
			if src.Ready {
				ready = 1
			}
			ch <- prometheus.MustNewConstMetric(c.sourceReady, prometheus.GaugeValue, ready, src.Name)
			if !src.LastSuccess.IsZero() {
				ch <- prometheus.MustNewConstMetric(c.sourceSuccess, prometheus.GaugeValue,
					float64(src.LastSuccess.UnixNano())/1e9, src.Name)
			}
		}
	}
	c.observeStarts(pods)
	c.startDuration.Collect(ch)
}

// observeStarts observes the start duration of each pod seen for the first
// time with every app container running: from its startTime (when tug
// first handled it) to the last container's start.
func (c *statusCollector) observeStarts(pods []podview.View) {
	c.mu.Lock()
	defer c.mu.Unlock()
	current := make(map[string]bool, len(pods))
	for _, v := range pods {
		uid := v.Metadata.UID
		current[uid] = true
		if c.started[uid] || v.Status.StartTime == nil || len(v.Status.ContainerStatuses) == 0 {
			continue
		}
		var last time.Time
		running := true
		for _, cs := range v.Status.ContainerStatuses {
			if cs.State.Running == nil {
				running = false
				break
			}
			if cs.State.Running.StartedAt.After(last) {
				last = cs.State.Running.StartedAt
			}
		}
		if !running {
			continue
		}
		c.started[uid] = true
		if d := last.Sub(*v.Status.StartTime); d >= 0 {
			c.startDuration.Observe(d.Seconds())
		}
	}
	for uid := range c.started {
		if !current[uid] {
			delete(c.started, uid)
		}
	}
}
