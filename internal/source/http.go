package source

import (
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"tug/internal/pod"
)

// HTTPConfig configures an HTTP source. The zero value of each field but
// URL means its default.
type HTTPConfig struct {
	// URL is polled (--manifest-url); http or https.
	URL string
	// Header is sent with every request (--manifest-url-header).
	Header http.Header
	// Period is the wait between polls (--http-check-frequency), with ±10%
	// jitter. Default 20s.
	Period time.Duration
	// Timeout bounds each request, body included. Default 10s.
	Timeout time.Duration
	// MaxBody is the largest body accepted. Default 10 MiB.
	MaxBody int64
	// CAFile is a PEM bundle added to the system roots (--manifest-url-ca).
	CAFile string
	// VerifyKey, when set, makes a valid ed25519 signature of the body
	// mandatory (see SignatureHeader).
	VerifyKey ed25519.PublicKey
	// Checkpoint is the path of this URL's checkpoint file; "" for none.
	Checkpoint string
	// Hostname is appended to each pod name.
	Hostname string
	// Log receives the source's logs. Default: discard.
	Log *slog.Logger
}

const (
	defaultPeriod     = 20 * time.Second
	defaultTimeout    = 10 * time.Second
	defaultMaxBody    = 10 << 20
	maxSignatureBytes = 4 << 10
)

// errClass sorts fetch failures: an unreachable URL (transport error,
// non-200/304 status, a body cut short) never makes a source that has
// reported nothing yet ready; bad content (too large, bad or missing
// signature, a parse error) does, with the error and no pods.
type errClass int

const (
	unreachable errClass = iota + 1
	badContent
)

type fetchError struct {
	class errClass
	err   error
}

func (e *fetchError) Error() string { return e.err.Error() }
func (e *fetchError) Unwrap() error { return e.err }

func isUnreachable(err error) bool {
	var fe *fetchError
	return errors.As(err, &fe) && fe.class == unreachable
}

// HTTP is the manifest URL source. Each report is one pod.Manifest whose
// Origin.Source and Origin.File are the URL.
//
// It reports the accepted content: the checkpoint at start (before any
// request), then each new, verified, parsed body. A failure keeps the
// accepted content: the source reports its Hash with the error (the store
// keeps the last good pods), once per distinct error text. Until something
// was reported (no checkpoint, nothing fetched), an unreachable URL reports
// nothing, so the source stays not ready and removes no pods.
type HTTP struct {
	cfg    HTTPConfig
	url    string
	sigURL string
	client *http.Client
	sink   Sink
	log    *slog.Logger
	origin pod.Origin

	// State owned by Run.
	acc         accepted
	hasAcc      bool
	reported    bool   // Set was called
	reportedErr string // the error of the last Set; "" when it was the accepted content
	failing     string // the error last logged; "" when ok
	ckptErr     string // the checkpoint write error last logged

	parses atomic.Int64 // for tests: bodies parsed

	mu sync.Mutex
	st pod.FetchStatus
}

// accepted is the content the source last took in.
type accepted struct {
	hash         string
	sig          string
	pods         []*pod.Pod
	etag         string
	lastModified string
	fetchedAt    time.Time
}

// NewHTTP checks the URL, loads the CA file and returns a source that
// reports to sink. Nothing happens until Run.
func NewHTTP(cfg HTTPConfig, sink Sink) (*HTTP, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("source: manifest URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("source: manifest URL %q: want http:// or https:// and a host", cfg.URL)
	}
	if cfg.Period <= 0 {
		cfg.Period = defaultPeriod
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = defaultTimeout
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = defaultMaxBody
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.VerifyKey != nil && len(cfg.VerifyKey) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("source: verify key: %d bytes, want %d", len(cfg.VerifyKey), ed25519.PublicKeySize)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("source: manifest URL CA: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("source: manifest URL CA %s: no PEM certificate", cfg.CAFile)
		}
		tr.TLSClientConfig.RootCAs = pool
	}
	su := *u
	su.Path += ".sig"
	if su.RawPath != "" {
		su.RawPath += ".sig"
	}
	h := &HTTP{
		cfg:    cfg,
		url:    cfg.URL,
		sigURL: su.String(),
		client: &http.Client{Transport: tr, Timeout: cfg.Timeout},
		sink:   sink,
		origin: pod.Origin{Source: cfg.URL, File: cfg.URL},
	}
	h.log = cfg.Log.With("source", h.url)
	return h, nil
}

// Name returns the URL. It is also the Origin.Source and Origin.File of the
// manifests it reports.
func (h *HTTP) Name() string { return h.url }

// Status returns what the source last saw of its URL. Safe for concurrent
// use.
func (h *HTTP) Status() pod.FetchStatus {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.st
}

// Run loads the checkpoint and reports it, then polls the URL at once and
// every Period (±10%) until ctx is done; it then returns nil. Run must not
// be called again before it returned. It starts no goroutine.
func (h *HTTP) Run(ctx context.Context) error {
	h.start(ctx)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		h.poll(ctx)
		t.Reset(jitter(h.cfg.Period))
	}
}

func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.9 + 0.2*rand.Float64()))
}

// start resets the state and reports the checkpoint if it is usable.
func (h *HTTP) start(ctx context.Context) {
	h.acc, h.hasAcc, h.reported, h.reportedErr, h.failing, h.ckptErr = accepted{}, false, false, "", "", ""
	h.mu.Lock()
	h.st = pod.FetchStatus{}
	h.mu.Unlock()
	if h.cfg.Checkpoint == "" {
		return
	}
	acc, err := h.loadCheckpoint()
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		h.log.Warn("ignoring manifest URL checkpoint", "path", h.cfg.Checkpoint, "err", err)
		return
	}
	h.acc, h.hasAcc = acc, true
	h.mu.Lock()
	h.st.ETag, h.st.LastModified = acc.etag, acc.lastModified
	h.st.CheckpointTime, h.st.FromCheckpoint = acc.fetchedAt, true
	h.mu.Unlock()
	h.log.Info("starting manifest URL pods from checkpoint", "path", h.cfg.Checkpoint, "fetched", acc.fetchedAt, "pods", len(acc.pods))
	h.report(ctx, nil)
}

func (h *HTTP) loadCheckpoint() (accepted, error) {
	cp, err := readCheckpoint(h.cfg.Checkpoint)
	if err != nil {
		return accepted{}, err
	}
	if cp.URL != h.url {
		return accepted{}, fmt.Errorf("checkpoint %s is for %q, not this URL", h.cfg.Checkpoint, cp.URL)
	}
	if h.cfg.VerifyKey != nil {
		if err := verify(h.cfg.VerifyKey, cp.Body, cp.Signature); err != nil {
			return accepted{}, fmt.Errorf("checkpoint %s: %w", h.cfg.Checkpoint, err)
		}
	}
	pods, err := h.parse(cp.Body)
	if err != nil {
		return accepted{}, fmt.Errorf("checkpoint %s: %w", h.cfg.Checkpoint, err)
	}
	return accepted{
		hash: cp.SHA256, sig: cp.Signature, pods: pods,
		etag: cp.ETag, lastModified: cp.LastModified, fetchedAt: cp.FetchedAt,
	}, nil
}

func (h *HTTP) parse(body []byte) ([]*pod.Pod, error) {
	h.parses.Add(1)
	return pod.Parse(body, pod.ParseOptions{Origin: h.origin, Hostname: h.cfg.Hostname})
}

// poll fetches the URL once and reports what changed.
func (h *HTTP) poll(ctx context.Context) {
	code, err := h.fetch(ctx)
	if err != nil && ctx.Err() != nil {
		return // shutting down: the cancellation is not the URL's fault
	}
	now := time.Now()
	h.mu.Lock()
	h.st.LastFetch, h.st.HTTPStatus = now, code
	if err == nil {
		h.st.LastSuccess, h.st.Error, h.st.FromCheckpoint = now, "", false
	} else {
		h.st.Error = err.Error()
	}
	h.mu.Unlock()

	h.logState(err)
	switch {
	case err == nil:
		if h.reportedErr != "" {
			h.report(ctx, nil) // ok again with the accepted content: clear the error
		}
	case !h.reported && isUnreachable(err):
		// Nothing ever worked: stay not ready rather than report nothing.
	case err.Error() != h.reportedErr:
		h.report(ctx, err)
	}
}

// report sends the accepted content, with err when the URL is failing.
func (h *HTTP) report(ctx context.Context, err error) {
	m := pod.Manifest{Origin: h.origin, Hash: h.acc.hash, Err: err}
	if err == nil {
		m.Pods = h.acc.pods
		h.reportedErr = ""
	} else {
		h.reportedErr = err.Error()
	}
	h.reported = true
	h.sink.Set(ctx, h.url, []pod.Manifest{m})
}

func (h *HTTP) logState(err error) {
	text := ""
	if err != nil {
		text = err.Error()
	}
	switch {
	case text == h.failing:
	case text != "":
		h.log.Warn("manifest URL failing, keeping the last accepted pods", "err", err)
	default:
		h.log.Info("manifest URL ok again")
	}
	h.failing = text
}

// fetch does one conditional GET and takes in a new body. It returns the
// HTTP status (0 when there was no response) and a *fetchError.
func (h *HTTP) fetch(ctx context.Context) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.url, nil)
	if err != nil {
		return 0, &fetchError{unreachable, err}
	}
	req.Header = h.cfg.Header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	if h.hasAcc {
		if h.acc.etag != "" {
			req.Header.Set("If-None-Match", h.acc.etag)
		}
		if h.acc.lastModified != "" {
			req.Header.Set("If-Modified-Since", h.acc.lastModified)
		}
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return 0, &fetchError{unreachable, h.stable(err)}
	}
	defer resp.Body.Close()
	code := resp.StatusCode
	switch code {
	case http.StatusNotModified:
		h.mu.Lock()
		h.st.NotModified++
		h.mu.Unlock()
		if !h.hasAcc {
			return code, &fetchError{unreachable, fmt.Errorf("GET %s: 304 Not Modified to an unconditional request", h.url)}
		}
		return code, nil
	case http.StatusOK:
	default:
		return code, &fetchError{unreachable, fmt.Errorf("GET %s: %s", h.url, resp.Status)}
	}
	h.mu.Lock()
	h.st.FullResponses++
	h.mu.Unlock()
	body, err := io.ReadAll(io.LimitReader(resp.Body, h.cfg.MaxBody+1))
	if err != nil {
		return code, &fetchError{unreachable, fmt.Errorf("GET %s: reading body: %w", h.url, h.stable(err))}
	}
	if int64(len(body)) > h.cfg.MaxBody {
		return code, &fetchError{badContent, fmt.Errorf("%s: body larger than %s: %w", h.url, sizeText(h.cfg.MaxBody), ErrTooLarge)}
	}
	return code, h.accept(ctx, body, resp.Header)
}

// stable drops the addresses (ephemeral local ports) from a network error,
// so that the same failure has the same text on every poll and is reported
// once.
func (h *HTTP) stable(err error) error {
	var op *net.OpError
	if !errors.As(err, &op) || op.Err == nil {
		return err
	}
	return fmt.Errorf("GET %s: %s %s: %w", h.url, op.Op, op.Net, op.Err)
}

func sizeText(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// accept takes in a 200 body: unchanged bytes cost nothing; new ones are
// verified, parsed, checkpointed and reported.
func (h *HTTP) accept(ctx context.Context, body []byte, hdr http.Header) error {
	etag, lastMod := hdr.Get("ETag"), hdr.Get("Last-Modified")
	hash := sha256Hex(body)
	if h.hasAcc && hash == h.acc.hash {
		h.acc.etag, h.acc.lastModified = etag, lastMod
		h.mu.Lock()
		h.st.ETag, h.st.LastModified = etag, lastMod
		h.mu.Unlock()
		return nil
	}
	sig := ""
	if h.cfg.VerifyKey != nil {
		sig = hdr.Get(SignatureHeader)
		if sig == "" {
			var err error
			if sig, err = h.fetchSignature(ctx); err != nil {
				return err
			}
		}
		if err := verify(h.cfg.VerifyKey, body, sig); err != nil {
			return &fetchError{badContent, fmt.Errorf("%s: %w", h.url, err)}
		}
	}
	pods, err := h.parse(body)
	if err != nil {
		var fe *pod.FieldError
		if !errors.As(err, &fe) {
			err = fmt.Errorf("%s: %w", h.url, err)
		}
		return &fetchError{badContent, err}
	}
	now := time.Now()
	h.acc = accepted{hash: hash, sig: sig, pods: pods, etag: etag, lastModified: lastMod, fetchedAt: now}
	h.hasAcc = true
	if h.cfg.Checkpoint != "" {
		err := writeCheckpoint(h.cfg.Checkpoint, checkpoint{
			URL: h.url, FetchedAt: now, ETag: etag, LastModified: lastMod, Body: body, Signature: sig,
		})
		if text := errText(err); text != h.ckptErr {
			if err != nil {
				h.log.Error("cannot write manifest URL checkpoint", "path", h.cfg.Checkpoint, "err", err)
			}
			h.ckptErr = text
		}
	}
	h.mu.Lock()
	h.st.ETag, h.st.LastModified = etag, lastMod
	h.st.CheckpointTime, h.st.FromCheckpoint = now, false
	h.mu.Unlock()
	h.log.Info("manifest URL content accepted", "sha256", hash, "pods", len(pods))
	h.report(ctx, nil)
	return nil
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// fetchSignature gets "<URL>.sig" with the same headers.
func (h *HTTP) fetchSignature(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.sigURL, nil)
	if err != nil {
		return "", &fetchError{unreachable, err}
	}
	req.Header = h.cfg.Header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return "", &fetchError{unreachable, h.stable(err)}
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
		return "", &fetchError{badContent, fmt.Errorf("%s: %w (GET %s: %s)", h.url, ErrNoSignature, h.sigURL, resp.Status)}
	case resp.StatusCode != http.StatusOK:
		return "", &fetchError{unreachable, fmt.Errorf("GET %s: %s", h.sigURL, resp.Status)}
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxSignatureBytes+1))
	if err != nil {
		return "", &fetchError{unreachable, fmt.Errorf("GET %s: reading body: %w", h.sigURL, err)}
	}
	if len(b) > maxSignatureBytes {
		return "", &fetchError{badContent, fmt.Errorf("%s: %w: %s larger than %d bytes", h.url, ErrBadSignature, h.sigURL, maxSignatureBytes)}
	}
	return string(b), nil
}
