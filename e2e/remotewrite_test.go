//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"tug/internal/testutil"
)

// promServer is a real Prometheus server (Debian's package) on the test's
// loopback, with remote write receiving on, its own port, config file and
// storage directory. Debian's package may run a service of its own on
// :9090; this one never uses that port.
type promServer struct {
	t    *testing.T
	bin  string
	dir  string
	port int
	cmd  *exec.Cmd
	out  *testutil.SyncBuffer
}

func newPromServer(t *testing.T) *promServer {
	t.Helper()
	// Nothing to scrape: the samples come by remote write only.
	return newPromServerWith(t, "global: {}\n", nil)
}

// newPromServerWith starts Prometheus with config as its prometheus.yml
// and files (a rules file, say) beside it.
func newPromServerWith(t *testing.T, config string, files map[string][]byte) *promServer {
	t.Helper()
	testutil.RequireCommand(t, "prometheus")
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatal(err)
	}
	p := &promServer{t: t, bin: bin, dir: t.TempDir(), port: freePort(t), out: &testutil.SyncBuffer{}}
	files = maps.Clone(files)
	if files == nil {
		files = map[string][]byte{}
	}
	files["prometheus.yml"] = []byte(config)
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(p.dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("prometheus output:\n%s", p.out.String())
		}
	})
	p.start()
	return p
}

func (p *promServer) addr() string { return "127.0.0.1:" + strconv.Itoa(p.port) }

// start starts Prometheus on its storage directory (what an earlier run
// stored is kept) and waits until it is ready.
func (p *promServer) start() {
	p.t.Helper()
	fmt.Fprintf(p.out, "==== starting prometheus\n")
	p.cmd = exec.Command(p.bin,
		"--config.file="+filepath.Join(p.dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(p.dir, "data"),
		"--web.listen-address="+p.addr(),
		"--web.enable-remote-write-receiver")
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		p.t.Fatalf("start prometheus: %v", err)
	}
	waitFor(p.t, 60*time.Second, "prometheus ready", func() (bool, error) {
		resp, err := http.Get("http://" + p.addr() + "/-/ready")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

// stop stops Prometheus cleanly (SIGTERM), so that a restart on the same
// storage directory has everything it had.
func (p *promServer) stop() {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
	p.cmd = nil
}

// promSeries is one series of a query's answer, with its samples.
type promSeries struct {
	Metric map[string]string `json:"metric"`
	Value  []any             `json:"value"`  // instant vector: [ts, "v"]
	Values [][]any           `json:"values"` // range vector: [[ts, "v"], ...]
}

// query runs an instant query (a range selector gives the raw samples).
func (p *promServer) query(q string, at time.Time) ([]promSeries, error) {
	v := url.Values{"query": {q}, "time": {strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64)}}
	resp, err := http.Get("http://" + p.addr() + "/api/v1/query?" + v.Encode())
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []promSeries `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, err
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("query %s: %s", q, r.Error)
	}
	return r.Data.Result, nil
}

// value is the value of the single series q returns now ("" for none).
func (p *promServer) value(q string) (string, error) {
	rs, err := p.query(q, time.Now())
	if err != nil || len(rs) != 1 || len(rs[0].Value) != 2 {
		return "", err
	}
	return fmt.Sprint(rs[0].Value[1]), nil
}

// rawSample is one stored sample.
type rawSample struct {
	at    time.Time
	value string
}

// samples returns the stored samples of the single series sel between
// from and to, in the order Prometheus returns them.
func (p *promServer) samples(sel string, from, to time.Time) []rawSample {
	p.t.Helper()
	window := to.Sub(from).Round(time.Second) + time.Second
	rs, err := p.query(fmt.Sprintf("%s[%ds]", sel, int(window.Seconds())), to)
	if err != nil {
		p.t.Fatal(err)
	}
	if len(rs) != 1 {
		p.t.Fatalf("%s: %d series, want 1", sel, len(rs))
	}
	var out []rawSample
	for _, v := range rs[0].Values {
		ts, _ := v[0].(float64)
		out = append(out, rawSample{at: time.UnixMilli(int64(ts * 1000)), value: fmt.Sprint(v[1])})
	}
	return out
}

// batchFiles sums the sizes of the remote-write batches in dir.
func batchFiles(t *testing.T, dir string) (n int, size int64) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".rw") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if fi, err := e.Info(); err == nil {
			n++
			size += fi.Size()
		}
	}
	return n, size
}

// TestRemoteWrite: two tugs push their metrics by remote write into a real
// Prometheus, which is stopped for two minutes while the first tug's pods
// change and the first tug is killed (kill -9) and restarted. The first
// tug's buffer holds the whole outage: once Prometheus is back, every
// sample of those two minutes is there, in order (Prometheus refuses
// out-of-order samples, counted as rejected), and the kill lost at most one
// push interval. While Prometheus answers, the batches never reach the
// disk. The second tug's buffer is capped below what the outage
// needs: it never outgrows its cap, and counts the oldest samples it drops.
func TestRemoteWrite(t *testing.T) {
	t.Parallel()
	const interval = 2 * time.Second
	const capBytes = 64 << 10
	prom := newPromServer(t)
	rwURL := "http://" + prom.addr() + "/api/v1/write"
	args := func(more ...string) []string {
		return append([]string{"--metrics-remote-write-url", rwURL, "--metrics-push-interval", interval.String(),
			"--node-labels", "zone=lab,node-role.kubernetes.io/edge=true"}, more...)
	}
	relay := func(tg *tug) { tg.relay(prom.addr()) }
	tg := startTug(t, tugOpts{args: args(), beforeStart: relay})
	capped := startTug(t, tugOpts{args: args("--hostname-override", "capped", "--metrics-buffer-size", strconv.Itoa(capBytes)), beforeStart: relay})
	tg.writeManifest("one.yaml", shPod("one", tg.image, idle))
	tg.waitRunning(startTimeout, "one", "main", 0)

	// The kubelet's series arrive with the node's external labels.
	node := `node="` + hostname + `",instance="` + hostname + `",zone="lab",node_role_kubernetes_io_edge="true"`
	pods := `kubelet_running_pods{` + node + `}`
	for q, want := range map[string]string{
		pods: "1",
		`count(container_cpu_usage_seconds_total{` + node + `,container="main"})`: "1",
		`count(kubelet_running_pods{node="capped",instance="capped"})`:            "1",
	} {
		waitFor(t, 60*time.Second, "Prometheus has "+q+" = "+want, func() (bool, error) {
			got, err := prom.value(q)
			return got == want, err
		})
	}

	// With the receiver answering, batches go from memory: nothing is
	// created in, renamed into or removed from the buffer directory (its
	// mtime stays) over several pushes, and Prometheus gets them.
	rwDir := filepath.Join(tg.rootDir, "remote-write")
	before, err := os.Stat(rwDir)
	if err != nil {
		t.Fatal(err)
	}
	restFrom := time.Now()
	time.Sleep(4 * interval)
	if after, err := os.Stat(rwDir); err != nil || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("the buffer directory changed while the receiver answered (mtime %v, then %v, %v): batches went to disk", before.ModTime(), after.ModTime(), err)
	}
	if got := prom.samples(pods, restFrom, time.Now()); len(got) < 2 {
		t.Errorf("%d samples pushed over %s of rest, want at least 2", len(got), 4*interval)
	}

	// Two minutes without Prometheus.
	prom.stop()
	stoppedAt := time.Now()
	t.Logf("prometheus stopped at %s", stoppedAt.Format(time.TimeOnly))
	tg.writeManifest("two.yaml", shPod("two", tg.image, idle))
	tg.waitRunning(startTimeout, "two", "main", 0)
	var maxCapped int64
	watchCap := func(until time.Time) {
		for time.Now().Before(until) {
			if _, size := batchFiles(t, filepath.Join(capped.rootDir, "remote-write")); size > maxCapped {
				maxCapped = size
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	watchCap(stoppedAt.Add(60 * time.Second))
	n, size := batchFiles(t, filepath.Join(tg.rootDir, "remote-write"))
	t.Logf("after 60s: %d batches, %d bytes buffered", n, size)
	if n < 10 {
		t.Errorf("after 60s without Prometheus, %d batches buffered, want about 30", n)
	}
	tg.Kill()
	killedAt := time.Now()
	tg.Start()
	restartedAt := time.Now()
	watchCap(stoppedAt.Add(2 * time.Minute))
	prom.start()
	backAt := time.Now()
	t.Logf("prometheus back at %s; tug killed at %s", backAt.Format(time.TimeOnly), killedAt.Format(time.TimeOnly))

	// Every buffered batch is delivered.
	waitFor(t, 90*time.Second, "both buffers delivered", func() (bool, error) {
		a, _ := batchFiles(t, filepath.Join(tg.rootDir, "remote-write"))
		b, _ := batchFiles(t, filepath.Join(capped.rootDir, "remote-write"))
		return a == 0 && b == 0, nil
	})
	waitFor(t, 30*time.Second, "the samples after the outage", func() (bool, error) {
		s := prom.samples(pods, backAt.Add(-time.Minute), time.Now())
		return len(s) > 0 && s[len(s)-1].at.After(backAt), nil
	})

	got := prom.samples(pods, stoppedAt, backAt)
	var lastBeforeKill time.Time
	sawOne, sawTwo := false, false
	for i, s := range got {
		if i > 0 && !s.at.After(got[i-1].at) {
			t.Errorf("sample %d at %s is not after the one before (%s)", i, s.at, got[i-1].at)
		}
		if s.at.Before(killedAt) {
			lastBeforeKill = s.at
		}
		sawOne = sawOne || s.value == "1"
		sawTwo = sawTwo || s.value == "2"
		// Between two samples: one interval, except across the kill.
		if i > 0 && !(got[i-1].at.Before(killedAt) && s.at.After(killedAt)) {
			if gap := s.at.Sub(got[i-1].at); gap > 2*interval+time.Second {
				t.Errorf("a gap of %s between the samples at %s and %s", gap, got[i-1].at.Format(time.TimeOnly), s.at.Format(time.TimeOnly))
			}
		}
	}
	outage := backAt.Sub(stoppedAt) - restartedAt.Sub(killedAt)
	t.Logf("%d samples during the outage of %s (%s of it with tug down); last before the kill %s before it",
		len(got), backAt.Sub(stoppedAt).Round(time.Second), restartedAt.Sub(killedAt).Round(time.Millisecond), killedAt.Sub(lastBeforeKill).Round(time.Millisecond))
	if want := int(outage/interval) * 8 / 10; len(got) < want {
		t.Errorf("%d samples during the outage, want at least %d (one per %s)", len(got), want, interval)
	}
	if !sawOne || !sawTwo {
		t.Errorf("the outage's samples do not show the pods changing from 1 to 2: saw 1 %v, saw 2 %v", sawOne, sawTwo)
	}
	// kill -9 loses at most one push interval: the batch gathered before
	// the last tick is on disk (plus a second for its write on a busy
	// machine).
	if lost := killedAt.Sub(lastBeforeKill); lastBeforeKill.IsZero() || lost > interval+time.Second {
		t.Errorf("the last sample before the kill is %s before it, want at most %s", lost, interval+time.Second)
	}
	if v, err := prom.value(`tug_metrics_remote_write_dropped_samples_total{` + node + `,reason="rejected"}`); err != nil || v != "0" {
		t.Errorf("samples refused by Prometheus (out of order): %q, %v", v, err)
	}

	// The capped tug kept within its cap, and counts what it dropped.
	t.Logf("capped buffer: at most %d bytes of %d", maxCapped, capBytes)
	if maxCapped > capBytes || maxCapped == 0 {
		t.Errorf("capped buffer peaked at %d bytes, want 0 < size <= %d", maxCapped, capBytes)
	}
	waitFor(t, 30*time.Second, "the capped tug's dropped samples in Prometheus", func() (bool, error) {
		v, err := prom.value(`tug_metrics_remote_write_dropped_samples_total{node="capped",reason="buffer_full"}`)
		f, _ := strconv.ParseFloat(v, 64)
		return f > 0, err
	})
	cappedSamples := prom.samples(`kubelet_running_pods{node="capped"}`, stoppedAt, backAt)
	sort.Slice(cappedSamples, func(i, j int) bool { return cappedSamples[i].at.Before(cappedSamples[j].at) })
	// A sample gathered as Prometheus was stopping may have reached it:
	// the outage's own samples are those gathered an interval after.
	var outageSamples []time.Time
	for _, s := range cappedSamples {
		if s.at.After(stoppedAt.Add(interval + time.Second)) {
			outageSamples = append(outageSamples, s.at)
		}
	}
	if len(outageSamples) == 0 || outageSamples[0].Before(stoppedAt.Add(30*time.Second)) {
		t.Errorf("the capped tug delivered %d samples of the outage, at %s: want only its last part (after %s)",
			len(outageSamples), formatTimes(outageSamples), stoppedAt.Add(30*time.Second).Format(time.TimeOnly))
	}
}

// formatTimes lists times as hh:mm:ss.mmm.
func formatTimes(ts []time.Time) string {
	out := make([]string, len(ts))
	for i, at := range ts {
		out[i] = at.Format("15:04:05.000")
	}
	return strings.Join(out, " ")
}

// TestRemoteWriteFollowsNoRedirect: a remote-write endpoint that answers
// with a redirect (307, then 301, 302 and 308 as tug retries) to another
// server: tug follows none of them, so the other server gets nothing (no
// metrics, no header of the header file, no Referer with the configured
// URL); the batches stay queued and are retried as after any failed send,
// none counted as sent; tug's log names the status and the redirect's
// target without its query, and no secret.
func TestRemoteWriteFollowsNoRedirect(t *testing.T) {
	t.Parallel()
	const (
		apiKey    = "key-Secret-7171"
		urlSecret = "url-Secret-7272"
		locSecret = "loc-Secret-7373"
	)
	var stolen, asked atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stolen.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(other.Close)
	statuses := []int{http.StatusTemporaryRedirect, http.StatusMovedPermanently, http.StatusFound, http.StatusPermanentRedirect}
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := asked.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Location", other.URL+"/steal?sig="+locSecret)
		w.WriteHeader(statuses[int(n-1)%len(statuses)])
	}))
	t.Cleanup(origin.Close)
	headerFile := filepath.Join(t.TempDir(), "rw-headers")
	if err := os.WriteFile(headerFile, []byte("X-Api-Key: "+apiKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	tg := startTug(t, tugOpts{healthzPort: port,
		args: []string{"--metrics-remote-write-url", origin.URL + "/api/v1/write?auth=" + urlSecret,
			"--metrics-remote-write-header-file", headerFile, "--metrics-push-interval", "1s"},
		beforeStart: func(tg *tug) {
			for _, s := range []string{origin.URL, other.URL} {
				u, _ := url.Parse(s)
				tg.relay(u.Host)
			}
		},
	})
	// Back-off 1s, 2s, 4s: the fourth answer (308) comes within ~10 s.
	tg.waitFor(60*time.Second, "four redirect answers to tug's pushes", func() (bool, error) {
		return asked.Load() >= int64(len(statuses)), fmt.Errorf("%d answered", asked.Load())
	})
	if n := stolen.Load(); n != 0 {
		t.Errorf("the redirect's target got %d requests", n)
	}
	mf, _ := tg.scrape(port)
	for name, ok := range map[string]func(float64) bool{
		"tug_metrics_remote_write_samples_sent_total": func(v float64) bool { return v == 0 },
		"tug_metrics_remote_write_batches_pending":    func(v float64) bool { return v >= 1 },
	} {
		m := series(mf, name, nil)
		if len(m) != 1 || !ok(value(m[0])) {
			t.Errorf("%s: %v", name, m)
		}
	}
	want := "307 Temporary Redirect: redirect to " + other.URL + "/steal not followed"
	tg.waitFor(10*time.Second, "tug's log naming the redirect", func() (bool, error) {
		return strings.Contains(tg.output(), want), fmt.Errorf("no %q in the log", want)
	})
	// The harness's own "==== nsenter ... tug run ..." lines carry the
	// command line; everything else is tug's.
	for _, line := range strings.Split(tg.output(), "\n") {
		if strings.HasPrefix(line, "==== ") {
			continue
		}
		for _, secret := range []string{apiKey, urlSecret, locSecret} {
			if strings.Contains(line, secret) {
				t.Errorf("tug's output holds the secret %q: %s", secret, line)
			}
		}
	}
}
