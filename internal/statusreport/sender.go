package statusreport

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"tug/internal/clock"
	"tug/internal/pod"
	"tug/internal/podview"
	"tug/internal/redact"
	"tug/internal/timefloor"
)

// StatusSource gives the pods and the manifest files as the status API
// serves them (implemented by podstatus.Served). Safe for concurrent use.
type StatusSource interface {
	Pods() []podview.View
	Manifests() []podview.ManifestStatus
}

// NodeSource gives the node as GET /node shows it.
type NodeSource interface {
	Node() podview.NodeView
}

// RolloutSource gives a pod's rollout history (implemented by
// rollout.Controller); an error means the pod has none.
type RolloutSource interface {
	History(uid string) (pod.RolloutHistory, error)
}

// Defaults of Config.
const (
	DefaultFrequency   = time.Minute
	DefaultMinInterval = 2 * time.Second
	DefaultTimeout     = 10 * time.Second
	// InitialBackoff and MaxBackoff bound the wait before a failed send
	// is tried again: it doubles from InitialBackoff up to MaxBackoff, and
	// each wait is drawn between its half and its whole.
	InitialBackoff = time.Second
	MaxBackoff     = time.Minute
)

// Config configures a Sender. The zero value of each optional field
// means its default.
type Config struct {
	// URL receives the documents, POSTed (--status-url). Its user
	// information and query values are never logged.
	URL string
	// Client sends them: its transport holds the TLS configuration. It
	// must not follow redirects (see NewClient). Required.
	Client *http.Client
	// Header is sent with every request (--status-url-header-file).
	Header http.Header
	// Signer, when set, seals each document in a signed envelope; nil:
	// the body is the document's JSON.
	Signer *Signer
	// Frequency is the heartbeat: a document is sent this long (±10%)
	// after the last one delivered even when nothing changed. Default
	// DefaultFrequency.
	Frequency time.Duration
	// MinInterval is how often the state is looked at, and so the least
	// time between two documents: changes within it make one document.
	// Default DefaultMinInterval.
	MinInterval time.Duration
	// Timeout bounds one request. Default DefaultTimeout.
	Timeout time.Duration
	// Uncompressed sends each body as it is; false: gzip-compressed
	// (Content-Encoding: gzip), and as it is from the first answer 415
	// Unsupported Media Type on (a receiver that refuses gzip).
	Uncompressed bool
	// Status, Node and Rollouts are read to build the document; Node and
	// Rollouts may be nil.
	Status   StatusSource
	Node     NodeSource
	Rollouts RolloutSource
	// NodeName names the node when Node is nil or gives no name.
	NodeName string
	// SelfUpdate, when set, gives the document's selfUpdate.
	SelfUpdate func() *SelfUpdate
	// TugVersion is the document's tugVersion and the User-Agent's.
	TugVersion string
	// Registerer receives tug_status_reports_total and
	// tug_status_last_success_timestamp_seconds; nil: not exported.
	Registerer prometheus.Registerer
	// Log receives the link's state changes. Default: discard.
	Log *slog.Logger
	// Clock tells the documents' time. nil: the system clock.
	Clock clock.Clock
	// Hold, when it returns true, means the clock is behind (package
	// timefloor): no document is built or sent, since its times would be
	// wrong; the first look with Hold false sends the document of that
	// moment, with true times. nil: never held.
	Hold func() bool
}

// Sender pushes the status document to the status URL (see the package
// doc). Its Run is its only loop; call it once. Blind spot: the state is
// looked at every MinInterval, so a state that lasts less (a pod ready for
// one second) may never be sent; its traces (restarts, the last
// termination reason) are.
type Sender struct {
	cfg     Config
	url     string // redacted
	log     *slog.Logger
	gzip    bool // bodies are gzip-compressed; only Run changes it
	reports *prometheus.CounterVec
	success prometheus.Gauge
}

// NewClient returns the HTTP client of a status URL: the TLS
// configuration given (nil: Go's defaults), idle connections kept for idle
// (zero: Go's 90 s) and no redirect followed, so that the headers and the
// document go nowhere but the configured URL; a redirect answer is a
// failed send.
func NewClient(tlsCfg *tls.Config, idle time.Duration) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsCfg
	if idle > 0 {
		tr.IdleConnTimeout = idle
	}
	return &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// New checks cfg and returns its sender. Nothing is sent until Run.
func New(cfg Config) (*Sender, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("statusreport: status URL %s: not an https URL", redact.URL(cfg.URL))
	}
	if cfg.Client == nil || cfg.Status == nil {
		return nil, errors.New("statusreport: a client and a status source are required")
	}
	if cfg.Frequency <= 0 {
		cfg.Frequency = DefaultFrequency
	}
	if cfg.MinInterval <= 0 {
		cfg.MinInterval = DefaultMinInterval
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	s := &Sender{cfg: cfg, url: redact.Parsed(u), log: cfg.Log, gzip: !cfg.Uncompressed}
	s.reports = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tug_status_reports_total",
		Help: "Status documents POSTed to --status-url, by result (success: a 2xx answer; failure: any other answer or no answer).",
	}, []string{"result"})
	s.success = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "tug_status_last_success_timestamp_seconds",
		Help: "When --status-url last accepted a status document (Unix time; 0: never).",
	})
	if cfg.Registerer != nil {
		if err := errors.Join(cfg.Registerer.Register(s.reports), cfg.Registerer.Register(s.success)); err != nil {
			return nil, fmt.Errorf("statusreport: metrics: %w", err)
		}
	}
	return s, nil
}

// Run sends documents until ctx ends, then returns ctx's error. Every
// MinInterval it builds the document and sends it when it differs from
// the last one delivered (its time aside), when the heartbeat is due, or,
// after a failure, when the back-off has passed: the document of that
// moment, so that the link coming back brings the latest state and
// nothing older. It logs when the link starts failing and when it works
// again, not each failure.
func (s *Sender) Run(ctx context.Context) error {
	tick := time.NewTicker(s.cfg.MinInterval)
	defer tick.Stop()
	var (
		delivered []byte    // the key of the last document delivered
		heartbeat time.Time // when the next heartbeat is due
		retryAt   time.Time // while failing, when to try again
		backoff   time.Duration
		failing   bool
	)
	for {
		if s.cfg.Hold != nil && s.cfg.Hold() {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-tick.C:
				continue
			}
		}
		now := time.Now()
		doc := s.build()
		key, err := doc.key()
		if err != nil {
			return fmt.Errorf("statusreport: encode: %w", err)
		}
		due := !bytes.Equal(key, delivered) || !now.Before(heartbeat)
		if failing {
			due = !now.Before(retryAt)
		}
		if due {
			if err := s.send(ctx, doc); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				s.reports.WithLabelValues("failure").Inc()
				backoff = min(max(2*backoff, InitialBackoff), MaxBackoff)
				retryAt = now.Add(backoff/2 + rand.N(backoff/2+1))
				if !failing {
					s.log.Warn("status report failed; retrying with back-off", "err", err)
				}
				failing = true
			} else {
				s.reports.WithLabelValues("success").Inc()
				s.success.Set(float64(s.cfg.Clock.Now().UnixNano()) / 1e9)
				if failing {
					s.log.Info("status report delivered again")
				}
				failing, backoff = false, 0
				delivered = key
				heartbeat = now.Add(jitter(s.cfg.Frequency))
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// jitter returns d ±10%.
func jitter(d time.Duration) time.Duration {
	return d - d/10 + rand.N(d/5+1)
}

// build gathers the state and builds its document.
func (s *Sender) build() Document {
	snap := Snapshot{Pods: s.cfg.Status.Pods(), Manifests: s.cfg.Status.Manifests()}
	now := s.cfg.Clock.Now()
	if s.cfg.Node != nil {
		snap.Node = s.cfg.Node.Node()
		conds := slices.Clone(snap.Node.Status.Conditions)
		for i := range conds {
			conds[i].LastTransitionTime = trueTime(now, conds[i].LastTransitionTime)
		}
		snap.Node.Status.Conditions = conds
	}
	if snap.Node.Metadata.Name == "" {
		snap.Node.Metadata.Name = s.cfg.NodeName
	}
	if s.cfg.Rollouts != nil {
		snap.Rollouts = map[string]pod.RolloutHistory{}
		for _, p := range snap.Pods {
			if h, err := s.cfg.Rollouts.History(p.Metadata.UID); err == nil {
				snap.Rollouts[p.Metadata.UID] = h
			}
		}
	}
	d := Build(snap)
	d.TugVersion = s.cfg.TugVersion
	if s.cfg.SelfUpdate != nil {
		d.SelfUpdate = s.cfg.SelfUpdate()
	}
	if s.cfg.Signer != nil {
		d.Node.KeyFingerprint = s.cfg.Signer.Fingerprint()
	}
	d.GeneratedAt = now.UTC()
	return d
}

// trueTime returns t, a time tug read in this process, as the wall clock
// of now says it: a time read while the clock was behind (a condition's
// transition at 1970, after a boot without a real-time clock) comes out
// at its true time, since the monotonic clock both readings carry does not
// step. A time without a monotonic reading (read back from a file, or
// given by another process) is returned as it is.
//
// The result must not change from one document to the next while nothing
// happens: a change is what sends a document. The wall clock drifts from
// the monotonic one by a little (NTP slewing it, a hypervisor), so the
// computed true time moves by nanoseconds at each build; settle keeps the
// time as it was read when the two agree within a second, else the true
// time to the second.
func trueTime(now, t time.Time) time.Time {
	if t.IsZero() || t == t.Round(0) {
		return t
	}
	return settle(now.Add(-now.Sub(t)), t.Round(0))
}

// settle returns read, the wall time a reading carried, when the true time
// computed for it is within a second of it, else that true time truncated
// to the second: a value that stays the same while the clocks only drift.
func settle(computed, read time.Time) time.Time {
	if d := computed.Sub(read); d > -time.Second && d < time.Second {
		return read
	}
	return computed.Truncate(time.Second)
}

// maxAnswer bounds what is read of an answer's body (then dropped), so
// that the connection can be reused.
const maxAnswer = 64 << 10

// send POSTs doc, signed when there is a signer. Its errors name the
// redacted URL, never the configured one.
func (s *Sender) send(ctx context.Context, doc Document) error {
	body, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("statusreport: encode: %w", err)
	}
	ctype := "application/json"
	if s.cfg.Signer != nil {
		if body, err = s.cfg.Signer.Seal(body, doc.GeneratedAt); err != nil {
			return err
		}
		ctype = EnvelopeContentType
	}
	status, err := s.post(ctx, body, ctype, s.gzip)
	if err == nil && status == http.StatusUnsupportedMediaType && s.gzip {
		s.gzip = false
		s.log.Warn("status receiver refuses gzip-compressed documents; sending them uncompressed")
		status, err = s.post(ctx, body, ctype, false)
	}
	if err != nil {
		return err
	}
	if status/100 != 2 {
		return fmt.Errorf("POST %s: %w: %d %s", s.url, ErrRefused, status, http.StatusText(status))
	}
	return nil
}

// post POSTs body, gzip-compressed when compress is set, and returns the
// answer's status.
func (s *Sender) post(ctx context.Context, body []byte, ctype string, compress bool) (int, error) {
	if compress {
		var err error
		if body, err = Gzip(body); err != nil {
			return 0, fmt.Errorf("statusreport: compress: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("POST %s: %w", s.url, clean(err))
	}
	for name, values := range s.cfg.Header {
		req.Header[name] = values
	}
	req.Header.Set("Content-Type", ctype)
	if compress {
		req.Header.Set("Content-Encoding", "gzip")
	}
	req.Header.Set("User-Agent", "tug/"+s.cfg.TugVersion)
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("POST %s: %w", s.url, timefloor.ExplainTLS(clean(err), time.Now()))
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswer))
	return resp.StatusCode, nil
}

// Gzip returns b gzip-compressed at the best compression: a document is
// compressed once per send, small, and goes over links paid by the byte.
func Gzip(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// clean drops what a client error says beyond its cause: net/http's
// *url.Error names the URL requested, secrets included, and a network
// error names addresses.
func clean(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return fmt.Errorf("%s %s: %w", op.Op, op.Net, op.Err)
	}
	return err
}
