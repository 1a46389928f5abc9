// Package remotewrite owns pushing the agent's metrics with the Prometheus
// remote-write protocol (v1), for devices that nothing can scrape (behind
// NAT): every interval it gathers the registry /metrics serves, converts
// it to samples as a scrape would store them, queues the batch, then
// delivers the queue oldest first, forgetting each batch once the endpoint
// has accepted it. A batch sent at once never touches the disk; one that
// cannot go at once (the endpoint fails, a batch before it still waits)
// is written to a buffer directory, as is the queue when tug stops. A link
// that is down only makes the buffer grow, up to a cap beyond which the
// oldest batches go.
//
// It imports atomicfile, timefloor (a TLS failure of a clock behind, in
// words) and client libraries only, never agent/ or config.
package remotewrite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/client_golang/prometheus"

	"tug/internal/redact"
	"tug/internal/timefloor"
)

// Back-off between delivery attempts while the endpoint fails.
const (
	minBackoff = time.Second
	maxBackoff = 10 * time.Second
	// DefaultTimeout bounds one request when Config.Timeout is zero.
	DefaultTimeout = 30 * time.Second
)

// Dropped samples' reasons (the reason label of
// tug_metrics_remote_write_dropped_samples_total).
const (
	// ReasonBufferFull: the oldest batches removed to keep the buffer
	// under its cap.
	ReasonBufferFull = "buffer_full"
	// ReasonRejected: the endpoint answered 4xx (other than 429), which
	// a retry cannot change.
	ReasonRejected = "rejected"
	// ReasonWriteError: the batch could not be kept: its write to the
	// buffer directory failed when tug stopped, or a crash cut the write
	// short (counted at the next start from the temporary file left).
	ReasonWriteError = "write_error"
	// ReasonClockBehind: samples gathered while the clock was behind
	// (Config.Hold) beyond the cap of what is held, or held still when
	// tug stopped.
	ReasonClockBehind = "clock_behind"
)

// errRejected marks a request the endpoint refused for good.
var errRejected = errors.New("remotewrite: rejected by the endpoint")

// Config is what a Writer needs.
type Config struct {
	// URL is the remote-write endpoint (http or https).
	URL string
	// Header is added to every request (Authorization...). It is never
	// logged.
	Header http.Header
	// Interval is the time between two pushes: one batch each, holding
	// the gatherings made since the last one.
	Interval time.Duration
	// SampleInterval is the time between two gatherings (the samples'
	// resolution). Zero, or more than Interval: Interval (one gathering a
	// batch).
	SampleInterval time.Duration
	// BufferSize caps the total size of the batches queued (in memory
	// and on disk), in bytes.
	BufferSize int64
	// Dir is the buffer's directory.
	Dir string
	// ExternalLabels are added to every series that has no label of
	// that name.
	ExternalLabels []Label
	// Timeout bounds one request. Zero: DefaultTimeout.
	Timeout time.Duration
	// Gatherer is what is pushed.
	Gatherer prometheus.Gatherer
	// Registerer receives the writer's own metrics.
	Registerer prometheus.Registerer
	// Client sends the requests. Nil: a client with the default transport.
	// New takes a copy that follows no redirect, whatever the client's
	// CheckRedirect says.
	Client *http.Client
	// Log receives the link going down and coming back, and the batches
	// dropped.
	Log *slog.Logger
	// Hold, when it returns true, means the clock is behind (package
	// timefloor): a sample stamped now would carry a wrong time (1970,
	// which a Prometheus rejects as out of bounds). The gatherings go on,
	// held in memory unstamped and unsent, up to a quarter of BufferSize
	// (their encoded size; the oldest beyond it are dropped, counted
	// clock_behind); the first gathering with Hold false stamps each with
	// its true time (that gathering's time less the monotonic time
	// elapsed since the held one) and queues them before its own. nil:
	// never held.
	Hold func() bool
}

// Writer pushes the metrics. Build it with New; Run is its loop.
type Writer struct {
	cfg  Config
	buf  *buffer
	wake chan struct{}

	// held are the gatherings of a clock behind, oldest first, and their
	// encoded size; gathered are the gatherings not queued yet, oldest
	// first, perBatch of which make a batch. Only Run's goroutine touches
	// them.
	held     []heldBatch
	heldSize int64
	gathered [][]series
	perBatch int

	sent        prometheus.Counter
	dropped     *prometheus.CounterVec
	pending     prometheus.Gauge
	bytes       prometheus.Gauge
	lastSuccess prometheus.Gauge
}

// New opens the buffer in cfg.Dir (the batches a previous run left are
// delivered first; the samples of a write a crash cut short are counted
// as dropped, write_error) and registers the writer's metrics.
func New(cfg Config) (*Writer, error) {
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.SampleInterval <= 0 || cfg.SampleInterval > cfg.Interval {
		cfg.SampleInterval = cfg.Interval
	}
	cfg.Client = noRedirects(cfg.Client)
	buf, lost, err := openBuffer(cfg.Dir, cfg.BufferSize)
	if err != nil {
		return nil, err
	}
	w := &Writer{
		cfg:      cfg,
		buf:      buf,
		wake:     make(chan struct{}, 1),
		perBatch: max(1, int(cfg.Interval/cfg.SampleInterval)),
		sent: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tug_metrics_remote_write_samples_sent_total",
			Help: "Samples the remote-write endpoint accepted.",
		}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tug_metrics_remote_write_dropped_samples_total",
			Help: "Samples never delivered: buffer_full (the oldest batches, beyond --metrics-buffer-size), rejected (a 4xx answer other than 429), write_error (a batch that could not be written to disk when tug stopped, or whose write a crash cut short), clock_behind (gathered while the clock was behind tug's time floor, beyond a quarter of --metrics-buffer-size, or held still when tug stopped). A crash also loses what was gathered since the last push (--metrics-push-interval) and the last batch if it was not delivered yet, uncounted.",
		}, []string{"reason"}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tug_metrics_remote_write_batches_pending",
			Help: "Batches queued (in memory or on disk), not yet accepted by the endpoint.",
		}),
		bytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tug_metrics_remote_write_buffer_bytes",
			Help: "Size of the batches queued, in memory and on disk.",
		}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tug_metrics_remote_write_last_success_timestamp_seconds",
			Help: "When the endpoint last accepted a batch (Unix time).",
		}),
	}
	for _, r := range []string{ReasonBufferFull, ReasonRejected, ReasonWriteError, ReasonClockBehind} {
		w.dropped.WithLabelValues(r)
	}
	if cfg.Registerer != nil {
		if err := errors.Join(cfg.Registerer.Register(w.sent), cfg.Registerer.Register(w.dropped),
			cfg.Registerer.Register(w.pending), cfg.Registerer.Register(w.bytes),
			cfg.Registerer.Register(w.lastSuccess)); err != nil {
			return nil, fmt.Errorf("remotewrite: metrics: %w", err)
		}
	}
	if lost > 0 {
		w.dropped.WithLabelValues(ReasonWriteError).Add(float64(lost))
		cfg.Log.Warn("a crash cut a remote-write batch's write short; its samples are lost", "file", cfg.Dir, "samples", lost)
	}
	w.updateGauges()
	return w, nil
}

// Run gathers at once, and then every sample interval; it queues the first
// gathering as a batch at once (a receiver hears of a device soon after
// it starts) and then a batch every interval, holding the gatherings made
// since the last. It delivers the queue in a goroutine of its own, so that
// a slow or unreachable endpoint never delays a gathering. It returns nil
// when ctx ends, once the gatherings and batches not delivered are on disk
// for the next run.
func (w *Writer) Run(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.deliver(ctx)
	}()
	t := time.NewTicker(w.cfg.SampleInterval)
	defer t.Stop()
	w.collect(time.Now())
	w.flush(true)
	for {
		select {
		case <-ctx.Done():
			<-done
			w.flush(true)
			w.persist()
			if n := w.heldSamples(); n > 0 {
				w.dropped.WithLabelValues(ReasonClockBehind).Add(float64(n))
				w.cfg.Log.Warn("tug stops with remote-write samples gathered while the clock was behind; they are lost", "samples", n)
			}
			return nil
		case <-t.C:
			w.collect(time.Now())
		}
	}
}

// heldBatch is one gathering made while the clock was behind: its series
// (their timestamps not yet true) and when it was made, with its
// monotonic reading.
type heldBatch struct {
	taken  time.Time
	series []series
	size   int64
}

// collect gathers once and keeps the gathering for the next batch, queued
// once it has perBatch gatherings. While
// Hold says the clock is behind, it holds the gathering instead; the first
// gathering after stamps the held ones and keeps them first.
func (w *Writer) collect(now time.Time) {
	families, err := w.cfg.Gatherer.Gather()
	if err != nil {
		// Gather returns what it could gather besides the error.
		w.cfg.Log.Debug("gathering metrics for remote write", "err", err)
	}
	series := toTimeSeries(families, now.UnixMilli(), w.cfg.ExternalLabels)
	if w.cfg.Hold != nil && w.cfg.Hold() {
		w.hold(now, series)
		return
	}
	for _, h := range w.held {
		// now.Sub reads the monotonic clock when both times carry it: a
		// step of the wall clock between them does not count.
		ts := now.Add(-now.Sub(h.taken)).UnixMilli()
		for i := range h.series {
			for j := range h.series[i].samples {
				h.series[i].samples[j].ts = ts
			}
		}
		w.gathered = append(w.gathered, h.series)
	}
	if len(w.held) > 0 {
		w.cfg.Log.Info("remote-write samples held while the clock was behind are queued with their true times", "batches", len(w.held))
		w.held, w.heldSize = nil, 0
	}
	if len(series) > 0 {
		w.gathered = append(w.gathered, series)
	}
	w.flush(false)
}

// flush queues the gatherings kept, perBatch to a batch; all of them when
// all is true, else only full batches.
func (w *Writer) flush(all bool) {
	for len(w.gathered) >= w.perBatch || (all && len(w.gathered) > 0) {
		n := min(w.perBatch, len(w.gathered))
		w.queue(merge(w.gathered[:n]))
		w.gathered = w.gathered[n:]
	}
	if len(w.gathered) == 0 {
		w.gathered = nil
	}
}

// hold keeps one gathering of a clock behind, dropping the oldest held
// beyond a quarter of BufferSize.
func (w *Writer) hold(now time.Time, series []series) {
	if len(series) == 0 {
		return
	}
	var size int64
	for _, s := range series {
		size += int64(timeSeriesSize(s))
	}
	w.held = append(w.held, heldBatch{taken: now, series: series, size: size})
	w.heldSize += size
	for len(w.held) > 1 && w.heldSize > w.cfg.BufferSize/4 {
		w.dropped.WithLabelValues(ReasonClockBehind).Add(float64(samples(w.held[0].series)))
		w.heldSize -= w.held[0].size
		w.held = w.held[1:]
	}
}

// heldSamples is the number of samples held.
func (w *Writer) heldSamples() int {
	n := 0
	for _, h := range w.held {
		n += samples(h.series)
	}
	return n
}

// queue encodes and buffers one batch, then wakes the sender.
func (w *Writer) queue(series []series) {
	if len(series) == 0 {
		return
	}
	body := snappy.Encode(nil, encodeWriteRequest(series))
	dropped, err := w.buf.add(body, samples(series))
	if dropped > 0 {
		w.dropped.WithLabelValues(ReasonBufferFull).Add(float64(dropped))
	}
	if err != nil {
		w.cfg.Log.Warn("cannot write the remote-write batches to disk; kept in memory", "file", w.cfg.Dir, "err", err)
	}
	w.updateGauges()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// deliver sends the buffer, oldest first, whenever collect wakes it, and
// retries with a back-off while the endpoint fails. It logs the link going
// down and coming back, once each. While the endpoint fails, every batch
// queued goes to disk (spill); the first success ends that.
func (w *Writer) deliver(ctx context.Context) {
	down := false
	backoff := minBackoff
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		}
		for ctx.Err() == nil {
			if w.cfg.Hold != nil && w.cfg.Hold() {
				break // the clock is behind: collect wakes us once it is not
			}
			bt, body, ok, err := w.buf.oldest()
			if err != nil {
				w.dropped.WithLabelValues(ReasonWriteError).Add(float64(bt.samples))
				w.cfg.Log.Warn("dropping an unreadable remote-write batch", "err", err)
				continue
			}
			if !ok {
				break
			}
			err = w.send(ctx, body)
			switch {
			case err == nil:
				w.sent.Add(float64(bt.samples))
				w.lastSuccess.SetToCurrentTime()
			case errors.Is(err, errRejected):
				w.dropped.WithLabelValues(ReasonRejected).Add(float64(bt.samples))
				w.cfg.Log.Warn("remote-write endpoint refused a batch; dropped", "url", redact.URL(w.cfg.URL), "err", err)
			default:
				if ctx.Err() != nil {
					return
				}
				if !down {
					down = true
					w.cfg.Log.Warn("remote-write endpoint unreachable; buffering on disk", "url", redact.URL(w.cfg.URL), "err", err)
				}
				if err := w.buf.setSpill(true); err != nil {
					w.cfg.Log.Warn("cannot write the remote-write batches to disk; kept in memory", "file", w.cfg.Dir, "err", err)
				}
				w.updateGauges()
				select {
				case <-ctx.Done():
					return
				case <-time.After(backoff):
				}
				backoff = min(2*backoff, maxBackoff)
				continue
			}
			if down {
				down = false
				_ = w.buf.setSpill(false)
				pending, _, _ := w.buf.stats()
				w.cfg.Log.Info("remote-write endpoint reachable again", "url", redact.URL(w.cfg.URL), "pending", pending)
			}
			backoff = minBackoff
			if err := w.buf.remove(bt); err != nil {
				w.cfg.Log.Warn("removing a delivered remote-write batch", "err", err)
			}
			w.updateGauges()
		}
	}
}

// noRedirects returns a copy of c (nil: a client with the default
// transport) that follows no redirect: the metrics and the header file's
// headers go to the configured URL and nowhere else, and a redirect
// answer is a failed send (send), as the status sender does.
func noRedirects(c *http.Client) *http.Client {
	var out http.Client
	if c != nil {
		out = *c
	}
	out.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &out
}

// redirectTarget is where a redirect answer points, resolved against the
// request's URL, without user information, query or fragment (they may
// hold a secret), for the log.
func redirectTarget(req *url.URL, location string) string {
	if location == "" {
		return "nowhere (no Location)"
	}
	u, err := req.Parse(location)
	if err != nil {
		return "<unparsable Location>"
	}
	clean := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}
	return clean.String()
}

// send posts one body. A 2xx answer is nil; a 4xx other than 429 wraps
// errRejected; anything else (3xx, which is not followed, 5xx, 429, no
// answer) is worth a retry. A redirect's error names its status and its
// target without query; its body is not read into the error.
func (w *Writer) send(ctx context.Context, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%w: %w", errRejected, err)
	}
	for name, values := range w.cfg.Header {
		req.Header[name] = values
	}
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	req.Header.Set("User-Agent", "tug")
	resp, err := w.cfg.Client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = redact.URL(ue.URL) // a query key must not reach the log
		}
		return fmt.Errorf("remote write: %w", timefloor.ExplainTLS(err, time.Now()))
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	switch {
	case resp.StatusCode/100 == 2:
		return nil
	case resp.StatusCode/100 == 3:
		return fmt.Errorf("remote write: %s: redirect to %s not followed", resp.Status, redirectTarget(req.URL, resp.Header.Get("Location")))
	case resp.StatusCode/100 == 4 && resp.StatusCode != http.StatusTooManyRequests:
		return fmt.Errorf("%w: %s: %s", errRejected, resp.Status, bytes.TrimSpace(msg))
	}
	return fmt.Errorf("remote write: %s: %s", resp.Status, bytes.TrimSpace(msg))
}

// persist writes the batches still in memory to disk when tug stops: the
// next start delivers them first. What cannot be written is lost, and
// counted.
func (w *Writer) persist() {
	n, err := w.buf.persist()
	if err != nil {
		w.cfg.Log.Warn("cannot keep the remote-write batches for the next start", "file", w.cfg.Dir, "err", err)
		w.dropped.WithLabelValues(ReasonWriteError).Add(float64(w.buf.samplesInMemory()))
		return
	}
	if n > 0 {
		w.cfg.Log.Info("remote-write batches kept on disk for the next start", "batches", n)
	}
}

func (w *Writer) updateGauges() {
	n, size, _ := w.buf.stats()
	w.pending.Set(float64(n))
	w.bytes.Set(float64(size))
}
