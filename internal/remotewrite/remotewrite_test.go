package remotewrite

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/prometheus/prompb"
)

// receiver is a remote-write endpoint: it decodes every request and
// answers status (200 when zero).
type receiver struct {
	t      *testing.T
	mu     sync.Mutex
	status int
	got    []prompb.WriteRequest
	header http.Header
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.header = req.Header.Clone()
	if r.status != 0 {
		w.WriteHeader(r.status)
		return
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		r.t.Error(err)
		return
	}
	data, err := snappy.Decode(nil, body)
	if err != nil {
		r.t.Errorf("snappy: %v", err)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	var wr prompb.WriteRequest
	if err := wr.Unmarshal(data); err != nil {
		r.t.Errorf("protobuf: %v", err)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	r.got = append(r.got, wr)
}

func (r *receiver) setStatus(s int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status = s
}

// timestamps returns the timestamp of each request received, in order.
func (r *receiver) timestamps() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []int64
	for _, wr := range r.got {
		out = append(out, wr.Timeseries[0].Samples[0].Timestamp)
	}
	return out
}

// newTestWriter builds a writer of one gauge (and its own metrics, which
// go to a registry of their own) on dir, pointed at url.
func newTestWriter(t *testing.T, dir, url string, capBytes int64) (*Writer, *prometheus.Registry) {
	t.Helper()
	src := prometheus.NewRegistry()
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "kubelet_running_pods", Help: "h"})
	g.Set(2)
	src.MustRegister(g)
	own := prometheus.NewRegistry()
	w, err := New(Config{
		URL: url, Header: http.Header{"Authorization": {"Bearer s3cret"}}, Interval: time.Hour,
		BufferSize: capBytes, Dir: dir, ExternalLabels: []Label{{Name: "node", Value: "edge1"}},
		Timeout: 5 * time.Second, Gatherer: src, Registerer: own,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return w, own
}

// deliverAll runs the sender until the buffer is empty (or the deadline).
func deliverAll(t *testing.T, w *Writer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.deliver(ctx) }()
	defer func() { cancel(); <-done }()
	select {
	case w.wake <- struct{}{}:
	default: // collect woke it already
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if n, _, _ := w.buf.stats(); n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("buffer not delivered within 20s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func files(t *testing.T, dir string) int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

func TestWriterPushes(t *testing.T) {
	rcv := &receiver{t: t}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	w, own := newTestWriter(t, t.TempDir(), srv.URL, 1<<20)
	w.collect(time.UnixMilli(5000))
	deliverAll(t, w)

	if len(rcv.got) != 1 {
		t.Fatalf("got %d requests, want 1", len(rcv.got))
	}
	for name, want := range map[string]string{
		"Content-Encoding": "snappy", "Content-Type": "application/x-protobuf",
		"X-Prometheus-Remote-Write-Version": "0.1.0", "Authorization": "Bearer s3cret",
	} {
		if got := rcv.header.Get(name); got != want {
			t.Errorf("header %s = %q, want %q", name, got, want)
		}
	}
	want := []string{"__name__=kubelet_running_pods,node=edge1 2@5000"}
	if got := seriesText(rcv.got[0].Timeseries); len(got) != 1 || got[0] != want[0] {
		t.Errorf("series %q, want %q", got, want)
	}
	if got := testutil.ToFloat64(w.sent); got != 1 {
		t.Errorf("samples sent = %v, want 1", got)
	}
	if n, err := testutil.GatherAndCount(own, "tug_metrics_remote_write_last_success_timestamp_seconds"); err != nil || n != 1 {
		t.Errorf("last success metric: %d, %v", n, err)
	}
	if got := testutil.ToFloat64(w.lastSuccess); got == 0 {
		t.Error("last success time not set")
	}
}

func TestWriterBuffersInOrderUnderCap(t *testing.T) {
	rcv := &receiver{t: t}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	dir := t.TempDir()
	w, _ := newTestWriter(t, dir, srv.URL, 1<<20)
	w.collect(time.UnixMilli(0))
	_, one, _ := w.buf.stats()
	// Room for three batches: of ten gathered while the endpoint fails,
	// the last three stay, in order.
	w.buf.max = 3*one + one/2

	rcv.setStatus(http.StatusServiceUnavailable)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.deliver(ctx) }()
	for i := 1; i < 10; i++ {
		w.collect(time.UnixMilli(int64(i) * 1000))
	}
	cancel()
	<-done
	if n, size, onDisk := w.buf.stats(); n != 3 || onDisk != 3 || size > w.buf.max || files(t, dir) != 3 {
		t.Errorf("buffer holds %d batches (%d files), %d bytes, want 3 under %d", n, files(t, dir), size, w.buf.max)
	}
	if got := testutil.ToFloat64(w.dropped.WithLabelValues(ReasonBufferFull)); got != 7 {
		t.Errorf("dropped samples (buffer_full) = %v, want 7", got)
	}
	if got := testutil.ToFloat64(w.pending); got != 3 {
		t.Errorf("batches pending = %v, want 3", got)
	}

	rcv.setStatus(0)
	deliverAll(t, w)
	if got, want := rcv.timestamps(), []int64{7000, 8000, 9000}; !equal(got, want) {
		t.Errorf("delivered %v, want %v (oldest first)", got, want)
	}
	if files(t, dir) != 0 {
		t.Errorf("%d files left after delivery", files(t, dir))
	}
}

func TestWriterRestartDeliversOldBatchesFirst(t *testing.T) {
	rcv := &receiver{t: t}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	dir := t.TempDir()
	// A first run queues two batches (the second, behind the first still
	// waiting, takes both to disk), then dies without sending (kill -9:
	// nothing but the files is left), with a torn temporary file of one
	// sample.
	first, _ := newTestWriter(t, dir, srv.URL, 1<<20)
	first.collect(time.UnixMilli(1000))
	first.collect(time.UnixMilli(2000))
	if err := os.WriteFile(dir+"/.00000000000000000002-1.rw.tmp-123", []byte("torn"), 0o600); err != nil {
		t.Fatal(err)
	}

	second, _ := newTestWriter(t, dir, srv.URL, 1<<20)
	if n, _, _ := second.buf.stats(); n != 2 {
		t.Fatalf("restart found %d batches, want 2", n)
	}
	// The torn write's sample is lost, and counted.
	if got := testutil.ToFloat64(second.dropped.WithLabelValues(ReasonWriteError)); got != 1 {
		t.Errorf("dropped (write_error) at restart = %v, want 1 (the torn write's)", got)
	}
	second.collect(time.UnixMilli(3000))
	deliverAll(t, second)
	if got, want := rcv.timestamps(), []int64{1000, 2000, 3000}; !equal(got, want) {
		t.Errorf("delivered %v, want %v", got, want)
	}
	if files(t, dir) != 0 {
		t.Errorf("%d files left (the torn temporary file included)", files(t, dir))
	}
}

func TestWriterDropsRejectedBatches(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		dropped float64
		pending int
	}{
		{"400 is dropped", http.StatusBadRequest, 1, 0},
		{"429 is kept", http.StatusTooManyRequests, 0, 1},
		{"500 is kept", http.StatusInternalServerError, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rcv := &receiver{t: t, status: tt.status}
			srv := httptest.NewServer(rcv)
			defer srv.Close()
			w, _ := newTestWriter(t, t.TempDir(), srv.URL, 1<<20)
			w.collect(time.UnixMilli(1000))
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			w.deliver(ctx) // collect woke it: one attempt, then the back-off outlasts ctx
			if got := testutil.ToFloat64(w.dropped.WithLabelValues(ReasonRejected)); got != tt.dropped {
				t.Errorf("dropped (rejected) = %v, want %v", got, tt.dropped)
			}
			if n, _, _ := w.buf.stats(); n != tt.pending {
				t.Errorf("pending = %d, want %d", n, tt.pending)
			}
		})
	}
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// countWrites makes w's buffer count the batch files it writes.
func countWrites(w *Writer) *int {
	n := new(int)
	write := w.buf.write
	w.buf.write = func(path string, data []byte, perm os.FileMode) error {
		*n++
		return write(path, data, perm)
	}
	return n
}

// TestBatchesReachDiskOnlyWhenNeeded: a batch the endpoint takes at once
// is never written; one that cannot go at once is, and so is the queue
// when the writer stops.
func TestBatchesReachDiskOnlyWhenNeeded(t *testing.T) {
	tests := []struct {
		name   string
		status int // the endpoint's answer, 0: 200
		// steps: "c" collects a batch, "d" runs the sender for one
		// attempt, "p" stops (persist)
		steps  string
		writes int // batch files written
		files  int // batch files left
		queued int
	}{
		{"sent at once", 0, "cdcdcd", 0, 0, 0},
		{"refused (400): dropped, not written", http.StatusBadRequest, "cd", 0, 0, 0},
		{"endpoint fails (503): written", http.StatusServiceUnavailable, "cd", 1, 1, 1},
		{"while it fails every batch is written at once", http.StatusServiceUnavailable, "cdc", 2, 2, 2},
		{"a batch before it still waits: both written", 0, "cc", 2, 2, 2},
		{"one batch queued at stop: written", 0, "cp", 1, 1, 1},
		{"stop with nothing queued: nothing written", 0, "cdp", 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rcv := &receiver{t: t, status: tt.status}
			srv := httptest.NewServer(rcv)
			defer srv.Close()
			dir := t.TempDir()
			w, _ := newTestWriter(t, dir, srv.URL, 1<<20)
			writes := countWrites(w)
			for i, step := range tt.steps {
				switch step {
				case 'c':
					w.collect(time.UnixMilli(int64(i) * 1000))
				case 'd':
					ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
					w.deliver(ctx) // collect woke it: one attempt, then the back-off outlasts ctx
					cancel()
				case 'p':
					w.persist()
				}
			}
			n, _, onDisk := w.buf.stats()
			if *writes != tt.writes || files(t, dir) != tt.files || onDisk != tt.files || n != tt.queued {
				t.Errorf("%d writes, %d files (%d batches on disk), %d queued; want %d writes, %d files, %d queued",
					*writes, files(t, dir), onDisk, n, tt.writes, tt.files, tt.queued)
			}
		})
	}
}

// TestWriterRunKeepsQueueAtStop: a batch whose send is cut short by the
// stop is on disk when Run returns, and a second writer delivers it.
func TestWriterRunKeepsQueueAtStop(t *testing.T) {
	hang := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Every request hangs until the stop cancels it (the server sees
		// the client go once the body is read).
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	srv := httptest.NewServer(hang)
	defer srv.Close()
	dir := t.TempDir()
	w, _ := newTestWriter(t, dir, srv.URL, 1<<20)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for n, _, _ := w.buf.stats(); n == 0; n, _, _ = w.buf.stats() {
		if time.Now().After(deadline) {
			t.Fatal("no batch gathered within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if files(t, dir) != 0 {
		t.Fatalf("%d files while the first send is in flight, want 0", files(t, dir))
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if files(t, dir) != 1 {
		t.Fatalf("%d files after the stop, want 1", files(t, dir))
	}

	rcv := &receiver{t: t}
	ok := httptest.NewServer(rcv)
	defer ok.Close()
	second, _ := newTestWriter(t, dir, ok.URL, 1<<20)
	deliverAll(t, second)
	if len(rcv.got) != 1 || files(t, dir) != 0 {
		t.Errorf("the next start delivered %d batches, %d files left; want 1, 0", len(rcv.got), files(t, dir))
	}
}

// TestWriterFollowsNoRedirect: a redirect answer (each of 301, 302, 307,
// 308) is a failed send, retried as a 5xx is: the redirect's target gets
// nothing (neither the body nor the headers), the batch stays queued, and
// the error names the status and the target without its query, never the
// body of the answer.
func TestWriterFollowsNoRedirect(t *testing.T) {
	for _, status := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			var mu sync.Mutex
			stolen := 0
			other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				stolen++
				mu.Unlock()
			}))
			defer other.Close()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Location", other.URL+"/steal?sig=loc-secret#frag")
				w.WriteHeader(status)
				io.WriteString(w, "body-secret")
			}))
			defer srv.Close()
			w, _ := newTestWriter(t, t.TempDir(), srv.URL+"/api/v1/write?auth=url-secret", 1<<20)
			w.collect(time.UnixMilli(1000))
			_, body, _, err := w.buf.oldest()
			if err != nil {
				t.Fatal(err)
			}
			err = w.send(context.Background(), body)
			if err == nil || errors.Is(err, errRejected) {
				t.Fatalf("send after a %d: %v, want an error worth a retry", status, err)
			}
			msg := err.Error()
			for _, want := range []string{http.StatusText(status), other.URL + "/steal"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not name %q", msg, want)
				}
			}
			for _, secret := range []string{"loc-secret", "url-secret", "body-secret", "s3cret", "frag"} {
				if strings.Contains(msg, secret) {
					t.Errorf("error %q holds %q", msg, secret)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			w.deliver(ctx) // collect woke it: one attempt, then the back-off outlasts ctx
			if n, _, _ := w.buf.stats(); n != 1 {
				t.Errorf("pending = %d, want the batch kept for a retry", n)
			}
			if got := testutil.ToFloat64(w.sent); got != 0 {
				t.Errorf("sent = %v, want 0", got)
			}
			mu.Lock()
			defer mu.Unlock()
			if stolen != 0 {
				t.Errorf("the redirect's target got %d requests", stolen)
			}
		})
	}
}

func TestRedirectTarget(t *testing.T) {
	req, _ := url.Parse("https://user:pw@rw.example/api/v1/write?auth=x")
	tests := []struct{ location, want string }{
		{"https://other.example/steal?sig=s#f", "https://other.example/steal"},
		{"/elsewhere?sig=s", "https://rw.example/elsewhere"},
		{"https://u:p@other.example:8443/p", "https://other.example:8443/p"},
		{"", "nowhere (no Location)"},
		{"http://[::1", "<unparsable Location>"},
	}
	for _, tt := range tests {
		if got := redirectTarget(req, tt.location); got != tt.want {
			t.Errorf("redirectTarget(%q) = %q, want %q", tt.location, got, tt.want)
		}
	}
}

// TestNewFollowsNoRedirectWithAGivenClient: a client given in Config is
// copied without its redirect policy; the caller's client is unchanged.
func TestNewFollowsNoRedirectWithAGivenClient(t *testing.T) {
	given := &http.Client{Timeout: time.Minute}
	c := noRedirects(given)
	if c == given || given.CheckRedirect != nil || c.Timeout != time.Minute {
		t.Fatalf("noRedirects changed or lost the given client: %+v", c)
	}
	if err := c.CheckRedirect(nil, nil); !errors.Is(err, http.ErrUseLastResponse) {
		t.Errorf("CheckRedirect = %v, want http.ErrUseLastResponse", err)
	}
}

// TestWriterHoldsWhileClockBehind: gatherings made while Hold says the
// clock is behind are neither queued nor sent; the first gathering after
// queues them first, each stamped with its true time (that gathering's
// time less the monotonic time elapsed since the held one, whatever the
// wall clock read then), then its own.
func TestWriterHoldsWhileClockBehind(t *testing.T) {
	rcv := &receiver{t: t}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	w, _ := newTestWriter(t, t.TempDir(), srv.URL, 1<<20)
	held := true
	w.cfg.Hold = func() bool { return held }
	base := time.Now() // carries a monotonic reading
	// The wall clock reads 1970 while held: the times given to collect
	// keep base's monotonic reading, moved by the time elapsed.
	w.collect(base)
	w.collect(base.Add(30 * time.Second))
	if n, _, _ := w.buf.stats(); n != 0 {
		t.Fatalf("%d batches queued while held", n)
	}
	held = false
	release := base.Add(time.Minute)
	w.collect(release)
	deliverAll(t, w)
	want := []int64{release.Add(-time.Minute).UnixMilli(), release.Add(-30 * time.Second).UnixMilli(), release.UnixMilli()}
	if got := rcv.timestamps(); len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("timestamps %v, want %v", got, want)
	}
}

// TestWriterHeldCap: what is held is capped at a quarter of the buffer;
// the oldest beyond are dropped, counted clock_behind, and so is what is
// held when tug stops.
func TestWriterHeldCap(t *testing.T) {
	w, _ := newTestWriter(t, t.TempDir(), "http://127.0.0.1:1/", 400)
	w.cfg.Hold = func() bool { return true }
	now := time.Now()
	for i := range 20 {
		w.collect(now.Add(time.Duration(i) * time.Second))
	}
	dropped := testutil.ToFloat64(w.dropped.WithLabelValues(ReasonClockBehind))
	if dropped == 0 || w.heldSize > 100 && len(w.held) > 1 {
		t.Fatalf("held %d batches (%d bytes), dropped %v: want the cap of 100 bytes kept", len(w.held), w.heldSize, dropped)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Run(ctx); err != nil {
		t.Fatal(err)
	}
	// Run gathers once more (held) before it sees ctx end.
	if got := testutil.ToFloat64(w.dropped.WithLabelValues(ReasonClockBehind)); got != 21 {
		t.Errorf("dropped clock_behind = %v after stop, want 21 (every sample held)", got)
	}
}

// TestWriterBatchesGatherings: with a sample interval a quarter of the
// push interval, four gatherings make one request whose series carry four
// samples each, oldest first; what is gathered when tug stops is queued,
// not lost.
func TestWriterBatchesGatherings(t *testing.T) {
	rcv := &receiver{t: t}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	w, _ := newTestWriter(t, t.TempDir(), srv.URL, 1<<20)
	w.cfg.SampleInterval = w.cfg.Interval / 4
	w.perBatch = 4
	for i := range int64(6) {
		w.collect(time.UnixMilli(1000 * (i + 1)))
	}
	deliverAll(t, w)
	if len(rcv.got) != 1 {
		t.Fatalf("after 6 gatherings %d requests, want 1 (4 gatherings)", len(rcv.got))
	}
	if n := len(rcv.got[0].Timeseries); n != 1 {
		t.Errorf("%d series, want 1 with 4 samples", n)
	}
	l := "__name__=kubelet_running_pods,node=edge1 "
	if got, want := seriesText(rcv.got[0].Timeseries), []string{l + "2@1000", l + "2@2000", l + "2@3000", l + "2@4000"}; !slices.Equal(got, want) {
		t.Errorf("series %q, want %q", got, want)
	}
	if got := testutil.ToFloat64(w.sent); got != 4 {
		t.Errorf("samples sent = %v, want 4", got)
	}
	w.flush(true)
	deliverAll(t, w)
	if len(rcv.got) != 2 {
		t.Fatalf("after the stop's flush %d requests, want 2", len(rcv.got))
	}
	if got, want := seriesText(rcv.got[1].Timeseries), []string{l + "2@5000", l + "2@6000"}; !slices.Equal(got, want) {
		t.Errorf("the stop's batch: %q, want %q", got, want)
	}
}

func TestMerge(t *testing.T) {
	a := []Label{{"__name__", "a"}}
	b := []Label{{"__name__", "b"}}
	one := func(l []Label, v float64, ts int64) series { return series{labels: l, samples: []sample{{v, ts}}} }
	for _, tt := range []struct {
		name string
		in   [][]series
		want []series
	}{
		{"one gathering as it is", [][]series{{one(a, 1, 1)}}, []series{one(a, 1, 1)}},
		{"samples joined oldest first", [][]series{{one(a, 1, 1), one(b, 2, 1)}, {one(a, 3, 2), one(b, 4, 2)}},
			[]series{{labels: a, samples: []sample{{1, 1}, {3, 2}}}, {labels: b, samples: []sample{{2, 1}, {4, 2}}}}},
		{"a series that appears later goes last", [][]series{{one(a, 1, 1)}, {one(b, 2, 2), one(a, 3, 2)}},
			[]series{{labels: a, samples: []sample{{1, 1}, {3, 2}}}, {labels: b, samples: []sample{{2, 2}}}}},
		{"a series that goes keeps its samples", [][]series{{one(a, 1, 1), one(b, 2, 1)}, {one(a, 3, 2)}},
			[]series{{labels: a, samples: []sample{{1, 1}, {3, 2}}}, {labels: b, samples: []sample{{2, 1}}}}},
		{"labels differ only in a value", [][]series{{one([]Label{{"x", "ab"}, {"y", "c"}}, 1, 1)}, {one([]Label{{"x", "a"}, {"y", "bc"}}, 2, 2)}},
			[]series{one([]Label{{"x", "ab"}, {"y", "c"}}, 1, 1), one([]Label{{"x", "a"}, {"y", "bc"}}, 2, 2)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := merge(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("merge = %+v, want %+v", got, tt.want)
			}
		})
	}
}
