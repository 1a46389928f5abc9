package api

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"tug/internal/events"
	"tug/internal/pod"
)

type fakeSources []SourceStatus

func (f fakeSources) Sources() []SourceStatus { return f }

// parseMetrics parses a /metrics answer with Prometheus' own text parser.
func parseMetrics(t *testing.T, body string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mf, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, body)
	}
	return mf
}

// metricValue is the value of the series of family name whose labels
// include want, and whether there is one.
func metricValue(mf map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f := mf[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		for k, v := range want {
			found := false
			for _, l := range m.GetLabel() {
				if l.GetName() == k && l.GetValue() == v {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

func TestMetricsParsed(t *testing.T) {
	status := testStatus()
	started := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// web runs with its container started 3 s after the pod.
	status.pods[0].Status.StartTime = &started
	status.pods[0].Status.ContainerStatuses = []pod.ContainerStatus{{Name: "app",
		State: pod.ContainerState{Running: &pod.StateRunning{StartedAt: started.Add(3 * time.Second)}}}}
	success := time.Unix(1700000000, 0)
	s := &Server{Status: status, Sources: fakeSources{
		{Name: "file:/etc/tug/manifests", Ready: true},
		{Name: "http://server/pods", Ready: false, LastSuccess: success},
	}}
	h := s.Handler()
	serve(t, h, "/pods")
	serve(t, h, "/pods/default/web")
	serve(t, s.HealthHandler(), "/healthz")
	rec := serve(t, h, "/metrics")
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics = %d", rec.Code)
	}
	mf := parseMetrics(t, rec.Body.String())
	tests := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"tug_pods", map[string]string{"phase": "Running"}, 3},
		{"tug_manifests", nil, 2},
		{"tug_manifest_errors", nil, 1},
		{"tug_source_ready", map[string]string{"source": "file:/etc/tug/manifests"}, 1},
		{"tug_source_ready", map[string]string{"source": "http://server/pods"}, 0},
		{"tug_source_last_success_timestamp_seconds", map[string]string{"source": "http://server/pods"}, 1700000000},
		{"kubelet_pod_start_duration_seconds", nil, 1}, // one observation
		{"kubelet_http_requests_total", map[string]string{"path": "/pods", "server_type": "socket", "method": "GET"}, 1},
		{"kubelet_http_requests_total", map[string]string{"path": "/pods/{namespace}/{name}"}, 1},
		{"kubelet_http_requests_total", map[string]string{"path": "/healthz", "server_type": "health"}, 1},
	}
	for _, tt := range tests {
		got, ok := metricValue(mf, tt.name, tt.labels)
		if !ok || got != tt.want {
			t.Errorf("%s%v = %v (found %v), want %v", tt.name, tt.labels, got, ok, tt.want)
		}
	}
	if _, ok := metricValue(mf, "tug_source_last_success_timestamp_seconds", map[string]string{"source": "file:/etc/tug/manifests"}); ok {
		t.Error("a source with no known success has a last success series")
	}
	h2 := mf["kubelet_pod_start_duration_seconds"].GetMetric()[0].GetHistogram()
	if h2.GetSampleSum() != 3 {
		t.Errorf("pod start duration sum = %v, want 3", h2.GetSampleSum())
	}
	// A second scrape does not observe the same pod again.
	mf = parseMetrics(t, serve(t, h, "/metrics").Body.String())
	if got, _ := metricValue(mf, "kubelet_pod_start_duration_seconds", nil); got != 1 {
		t.Errorf("pod start observations after a second scrape = %v, want 1", got)
	}
}

type fakeEvents struct{ ring *events.Ring }

func (f fakeEvents) List(after uint64) []events.Event { return f.ring.List(after) }
func (f fakeEvents) Wait(ctx context.Context, after uint64) ([]events.Event, error) {
	return f.ring.Wait(ctx, after)
}

func TestEvents(t *testing.T) {
	ring := events.New(10, nil, "edge1")
	web, dns := &pod.Pod{}, &pod.Pod{}
	web.Metadata.Namespace, web.Metadata.Name, web.Metadata.UID = "default", "web-edge1", "uid-web"
	dns.Metadata.Namespace, dns.Metadata.Name, dns.Metadata.UID = "kube-system", "dns-edge1", "uid-dns"
	ring.Event(web, "app", events.Normal, "Pulled", "present")
	ring.Event(dns, "", events.Warning, "FailedMount", "no such dir")
	ring.Event(web, "app", events.Normal, "Started", "Started container app")
	tests := []struct {
		query string
		want  []string
	}{
		{"", []string{"Pulled", "FailedMount", "Started"}},
		{"?namespace=default", []string{"Pulled", "Started"}},
		{"?pod=dns-edge1", []string{"FailedMount"}},
		{"?uid=uid-web&namespace=default", []string{"Pulled", "Started"}},
		{"?namespace=nope", nil},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			rec := serve(t, (&Server{Events: fakeEvents{ring}}).Handler(), "/events"+tt.query)
			var l EventList
			decodeBody(t, rec, &l)
			var got []string
			for _, e := range l.Items {
				got = append(got, e.Reason)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") || l.Kind != "EventList" {
				t.Errorf("GET /events%s = %v (kind %q), want %v", tt.query, got, l.Kind, tt.want)
			}
		})
	}

	// A watch gets the recent events, then the new ones, as they happen.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	sock := startServer(t, &Server{Events: fakeEvents{ring}}, "")
	got := make(chan WatchEvent, 10)
	go (&Client{SocketPath: sock}).WatchEvents(ctx, EventQuery{Namespace: "default"}, func(we WatchEvent) error {
		got <- we
		return nil
	})
	for _, want := range []string{"Pulled", "Started"} {
		if we := <-got; we.Object.Reason != want || we.Type != "ADDED" {
			t.Fatalf("watch: %+v, want ADDED %s", we, want)
		}
	}
	ring.Event(dns, "", events.Normal, "Ignored", "other namespace")
	for _, want := range []string{"ADDED Killing 1", "MODIFIED Killing 2"} {
		// A repeat recorded before the watcher woke would be seen once,
		// with its final count: one at a time.
		ring.Event(web, "app", events.Normal, "Killing", "Stopping container app")
		select {
		case we := <-got:
			if s := we.Type + " " + we.Object.Reason + " " + string(rune('0'+we.Object.Count)); s != want {
				t.Fatalf("watch: %q, want %q", s, want)
			}
		case <-ctx.Done():
			t.Fatalf("watch: no %s", want)
		}
	}
}
