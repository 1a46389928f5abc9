//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"tug/internal/api"
	"tug/internal/events"
	"tug/internal/testutil"
)

// scrape fetches tug's /metrics on its health port inside the node and
// parses it with Prometheus' own text parser. It returns the families and
// how long the scrape took.
func (tg *tug) scrape(port int) (map[string]*dto.MetricFamily, time.Duration) {
	tg.t.Helper()
	began := time.Now()
	resp, err := tg.nodeHTTPClient().Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		tg.t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	took := time.Since(began)
	if err != nil || resp.StatusCode != 200 {
		tg.t.Fatalf("GET /metrics: %s, %v", resp.Status, err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mf, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		tg.t.Fatalf("parse /metrics: %v\n%s", err, body)
	}
	return mf, took
}

// series returns the metrics of family name whose labels include want.
func series(mf map[string]*dto.MetricFamily, name string, want map[string]string) []*dto.Metric {
	var out []*dto.Metric
	for _, m := range mf[name].GetMetric() {
		ok := true
		for k, v := range want {
			if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == k && l.GetValue() == v }) {
				ok = false
			}
		}
		if ok {
			out = append(out, m)
		}
	}
	return out
}

// value is a gauge's or counter's value, or a histogram's sample count.
func value(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Histogram != nil:
		return float64(m.GetHistogram().GetSampleCount())
	case m.Untyped != nil:
		return m.GetUntyped().GetValue()
	}
	return 0
}

// TestMetricsAndEvents: /metrics, parsed by expfmt, has the Go and process
// collectors, the kubelet's names, tug's own and the running container's
// usage read from its cgroup; the pod's events (Pulled, Created, Started,
// then Killing) are seen through GET /events, tug events and tug inspect.
func TestMetricsAndEvents(t *testing.T) {
	t.Parallel()
	port := freePort(t)
	tg := startTug(t, tugOpts{healthzPort: port})
	// The container burns a little CPU and holds some memory, so that its
	// usage is not zero.
	tg.writeManifest("busy.yaml", shPod("busy", tg.image, `i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; x=$(head -c 2000000 /dev/zero | tr '\0' a); `+idle))
	tg.waitRunning(startTimeout, "busy", "main", 0)
	name := staticName("busy")

	var mf map[string]*dto.MetricFamily
	var took time.Duration
	waitFor(t, 30*time.Second, "the container's usage on /metrics", func() (bool, error) {
		mf, took = tg.scrape(port)
		cpu := series(mf, "container_cpu_usage_seconds_total", map[string]string{"pod": name, "container": "main", "namespace": "default"})
		ws := series(mf, "container_memory_working_set_bytes", map[string]string{"pod": name, "container": "main"})
		start := series(mf, "kubelet_pod_start_duration_seconds", nil)
		return len(cpu) == 1 && value(cpu[0]) > 0 && len(ws) == 1 && value(ws[0]) > 0 && len(start) == 1 && value(start[0]) >= 1, nil
	})
	t.Logf("/metrics with one pod: %v", took)
	tests := []struct {
		name   string
		labels map[string]string
		min    float64
	}{
		{"go_goroutines", nil, 1},
		{"process_resident_memory_bytes", nil, 1},
		{"kubelet_running_pods", nil, 1},
		{"kubelet_running_containers", map[string]string{"container_state": "running"}, 1},
		{"kubelet_pleg_relist_duration_seconds", nil, 1},
		{"kubelet_pleg_relist_interval_seconds", nil, 1},
		{"kubelet_pod_worker_duration_seconds", map[string]string{"operation_type": "create"}, 1},
		{"kubelet_http_requests_total", map[string]string{"path": "/metrics", "server_type": "health"}, 1},
		{"tug_source_ready", map[string]string{"source": "file:" + tg.manifestDir}, 1},
		{"tug_manifests", nil, 1},
		{"tug_pods", map[string]string{"phase": "Running"}, 1},
		{"container_memory_rss", map[string]string{"pod": name}, 1},
		{"container_oom_events_total", map[string]string{"pod": name}, 0},
	}
	for _, tt := range tests {
		s := series(mf, tt.name, tt.labels)
		if len(s) == 0 {
			t.Errorf("/metrics has no %s%v", tt.name, tt.labels)
			continue
		}
		if v := value(s[0]); v < tt.min {
			t.Errorf("%s%v = %v, want at least %v", tt.name, tt.labels, v, tt.min)
		}
	}

	// Events: through the API, tug events and tug inspect.
	uid := tg.uid("busy")
	reasons := func() []string {
		evs, err := tg.api().Events(context.Background(), api.EventQuery{UID: uid})
		if err != nil {
			t.Fatalf("GET /events: %v", err)
		}
		var out []string
		for _, e := range evs {
			out = append(out, e.Reason)
		}
		return out
	}
	if got := reasons(); strings.Join(got, ",") != "Pulled,Created,Started" {
		t.Errorf("events of the pod = %v, want Pulled, Created, Started", got)
	}
	out, err := exec.Command(tugBin, "events", "--socket", tg.socketPath(), name).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "LAST SEEN") || findLine(string(out), "Started", "pod/"+name, "Started container main") == "" {
		t.Errorf("tug events %s: %v\n%s", name, err, out)
	}
	out, err = exec.Command(tugBin, "inspect", "--socket", tg.socketPath(), "-o", "json", name).CombinedOutput()
	var inspected struct {
		LastEvent struct{ Reason string } `json:"lastEvent"`
	}
	if err != nil || json.Unmarshal(out, &inspected) != nil || inspected.LastEvent.Reason != "Started" {
		t.Errorf("tug inspect %s: lastEvent %q (%v)\n%s", name, inspected.LastEvent.Reason, err, out)
	}
	tg.removeManifest("busy.yaml")
	waitFor(t, startTimeout, "a Killing event", func() (bool, error) {
		return slices.Contains(reasons(), "Killing"), nil
	})

	// Warnings: a container that keeps crashing backs off; a hostPath
	// that is not there fails the mount.
	tg.writeManifest("crash.yaml", shPod("crash", tg.image, "exit 1"))
	tg.writeManifest("nodir.yaml", shPod("nodir", tg.image, idle, `      volumeMounts: [{name: v, mountPath: /v}]
  volumes:
    - name: v
      hostPath: {path: /nonexistent-observe, type: Directory}
`))
	for _, w := range []struct{ pod, reason string }{{"crash", "BackOff"}, {"nodir", "FailedMount"}} {
		waitFor(t, startTimeout, w.pod+": a "+w.reason+" warning", func() (bool, error) {
			evs, err := tg.api().Events(context.Background(), api.EventQuery{UID: tg.uid(w.pod)})
			return slices.ContainsFunc(evs, func(e events.Event) bool { return e.Reason == w.reason && e.Type == "Warning" }), err
		})
	}
}

// TestPrometheusScrapesTug: a real Prometheus server (Debian's package),
// on loopback inside the node, scrapes tug and reads its series.
func TestPrometheusScrapesTug(t *testing.T) {
	t.Parallel()
	testutil.RequireCommand(t, "prometheus")
	prom, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	tg := startTug(t, tugOpts{healthzPort: port})
	tg.writeManifest("idle.yaml", shPod("idle", tg.image, idle))
	tg.waitRunning(startTimeout, "idle", "main", 0)

	dir := t.TempDir()
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
scrape_configs:
  - job_name: tug
    static_configs:
      - targets: ["127.0.0.1:%d"]
`, port)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	promPort := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "nsenter", "--net="+tg.netns, prom,
		"--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address=127.0.0.1:"+strconv.Itoa(promPort))
	var promOut testutil.SyncBuffer
	cmd.Stdout, cmd.Stderr = &promOut, &promOut
	if err := cmd.Start(); err != nil {
		t.Fatalf("start prometheus: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("prometheus output:\n%s", promOut.String())
		}
	})
	query := func(q string) (string, error) {
		resp, err := tg.nodeHTTPClient().Get("http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(promPort)) + "/api/v1/query?query=" + q)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		var r struct {
			Data struct {
				Result []struct {
					Value []any `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			return "", err
		}
		if len(r.Data.Result) == 0 || len(r.Data.Result[0].Value) != 2 {
			return "", nil
		}
		return fmt.Sprint(r.Data.Result[0].Value[1]), nil
	}
	for q, want := range map[string]string{
		`up{job="tug"}`:        "1",
		`kubelet_running_pods`: "1",
		`count(container_cpu_usage_seconds_total{container="main"})`: "1",
	} {
		waitFor(t, 60*time.Second, "Prometheus reads "+q+" = "+want, func() (bool, error) {
			got, err := query(q)
			return got == want, err
		})
	}
}
