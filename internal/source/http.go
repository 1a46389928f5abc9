package source

import (
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"tug/internal/bundle"
	"tug/internal/clock"
	"tug/internal/pod"
	"tug/internal/podview"
	"tug/internal/redact"
	"tug/internal/timefloor"
)

// HTTPConfig configures an HTTP source. The zero value of each field but
// URL means its default.
type HTTPConfig struct {
	// URL is polled (--manifest-url); http or https. Its user information
	// and query values are secrets: the source's name, logs, errors and
	// checkpoint show it redacted (see redact.URL).
	URL string
	// Header is sent with every request (--manifest-url-header and
	// --manifest-url-header-file) to the URL's host, never to another host
	// a redirect leads to.
	Header http.Header
	// Period is the wait between polls (--http-check-frequency), with ±10%
	// jitter. Default 20s.
	Period time.Duration
	// Timeout bounds each request, body included. Default 10s.
	Timeout time.Duration
	// MaxBody is the largest body accepted. Default 10 MiB.
	MaxBody int64
	// CAFile is a PEM bundle added to the system roots (--manifest-url-ca),
	// or that replaces them when CAReplace is set.
	CAFile    string
	CAReplace bool
	// ClientCert and ClientKey are PEM files of the TLS client certificate
	// (mTLS); both or neither.
	ClientCert, ClientKey string
	// MaxRedirects caps the redirects followed. Default 5.
	MaxRedirects int
	// VerifyKeys, when set, make the body a signed bundle (see bundle.Envelope)
	// mandatory; any one key verifies it.
	VerifyKeys []ed25519.PublicKey
	// Checkpoint is the path of this URL's checkpoint file; "" for none.
	Checkpoint string
	// Hostname is appended to each pod name, and matched against a signed
	// bundle's node selector.
	Hostname string
	// Log receives the source's logs. Default: discard.
	Log *slog.Logger
	// Clock tells the time of fetches, of the checkpoint and of a bundle's
	// expiry; nil: the system clock.
	Clock clock.Clock
}

const (
	defaultPeriod    = 20 * time.Second
	defaultTimeout   = 10 * time.Second
	defaultMaxBody   = 10 << 20
	defaultRedirects = 5
	// maxValidator bounds an ETag or Last-Modified kept and sent back; a
	// longer one is not kept (the next request is unconditional).
	maxValidator = 256
)

// errClass sorts fetch failures: an unreachable URL (transport error,
// non-200/304 status, a body cut short) or bad content (too large, a bad
// or missing signature, an old, expired or foreign bundle, a parse error).
// Neither ever makes a source that has accepted nothing yet ready.
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

// HTTP is the manifest URL source. Each report is one pod.SourceFile whose
// Origin.Source and Origin.File are the URL. What it does with what it
// fetched, and with failures, is remote's.
type HTTP struct {
	remote
	cfg    HTTPConfig
	rawURL string   // requested; holds the secrets
	u      *url.URL // parsed rawURL
	url    string   // redacted: the name, in logs, errors and the checkpoint
	client *http.Client
}

// NewHTTP checks the URL, loads the CA and client certificate files and
// returns a source that reports to sink. Nothing happens until Run.
func NewHTTP(cfg HTTPConfig, sink Sink) (*HTTP, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("source: manifest URL %s: does not parse", redact.URL(cfg.URL))
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("source: manifest URL %q: want http:// or https:// and a host", redact.Parsed(u))
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
	if cfg.MaxRedirects <= 0 {
		cfg.MaxRedirects = defaultRedirects
	}
	for _, k := range cfg.VerifyKeys {
		if len(k) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("source: verify key: %d bytes, want %d", len(k), ed25519.PublicKeySize)
		}
	}
	tlsCfg, err := clientTLS(cfg)
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsCfg
	tr.IdleConnTimeout = idleConnTimeout(cfg.Period)
	h := &HTTP{
		cfg:    cfg,
		rawURL: cfg.URL,
		u:      u,
		url:    redact.Parsed(u),
	}
	h.remote = newRemote(h.url, remoteWords{source: "manifest URL", peer: "the URL", target: "URL"},
		cfg.VerifyKeys, cfg.Hostname, cfg.Checkpoint, cfg.Clock, sink, cfg.Log)
	h.client = &http.Client{Transport: tr, Timeout: cfg.Timeout, CheckRedirect: h.checkRedirect}
	return h, nil
}

// idleConnTimeout is how long the URL's idle connection is kept: two
// periods (+10% jitter), at least Go's 90 s, so that each poll reuses the
// last one's connection instead of paying a TCP and TLS handshake (over
// 2 KB against a poll of about 100 bytes).
func idleConnTimeout(period time.Duration) time.Duration {
	return max(90*time.Second, 2*period+period/5)
}

// clientTLS builds the TLS client configuration of the manifest URL.
func clientTLS(cfg HTTPConfig) (*tls.Config, error) {
	c, err := ClientTLS(TLSFiles{CA: cfg.CAFile, CAReplace: cfg.CAReplace, ClientCert: cfg.ClientCert, ClientKey: cfg.ClientKey})
	if err != nil {
		return nil, fmt.Errorf("source: manifest URL %w", err)
	}
	return c, nil
}

// checkRedirect is the client's redirect policy: at most MaxRedirects
// hops, never from https to http, no Referer (it would carry the URL's
// query), and the configured headers (and any Authorization, Cookie or
// basic auth) only to the configured scheme, host and port.
func (h *HTTP) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > h.cfg.MaxRedirects {
		return fmt.Errorf("%w: more than %d redirects", ErrRedirect, h.cfg.MaxRedirects)
	}
	if via[len(via)-1].URL.Scheme == "https" && req.URL.Scheme != "https" {
		return fmt.Errorf("%w: from https to %s", ErrRedirect, redact.Parsed(req.URL))
	}
	req.Header.Del("Referer") // Go sets it to the previous URL, query (token) included
	if !sameOrigin(req.URL, h.u) {
		for name := range h.cfg.Header {
			req.Header.Del(name)
		}
		for _, name := range []string{"Authorization", "Cookie", "Proxy-Authorization"} {
			req.Header.Del(name)
		}
		req.URL.User = nil // no basic auth, even one the Location names
	}
	return nil
}

// sameOrigin reports whether a and b have the same scheme, host and port.
func sameOrigin(a, b *url.URL) bool {
	return a.Scheme == b.Scheme && strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}

func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if u.Scheme == "https" {
		return "443"
	}
	return "80"
}

// Name returns the redacted URL (see redact.URL). It is also the
// Origin.Source and Origin.File of the manifests it reports, so it is what
// pod UIDs and container labels derive from.
func (h *HTTP) Name() string { return h.url }

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

// start loads the checkpoint and reports it (remote.start).
func (h *HTTP) start(ctx context.Context) {
	h.remote.start(ctx, func(st *podview.FetchStatus, acc accepted) {
		st.ETag, st.LastModified = acc.etag, acc.lastModified
	})
}

// capValidator drops an ETag or Last-Modified longer than maxValidator.
func capValidator(v string) string {
	if len(v) > maxValidator {
		return ""
	}
	return v
}

// poll fetches the URL once and reports what changed.
func (h *HTTP) poll(ctx context.Context) {
	code, err := h.fetch(ctx)
	if err != nil && ctx.Err() != nil {
		return // shutting down: the cancellation is not the URL's fault
	}
	h.polled(ctx, err, func(st *podview.FetchStatus) { st.HTTPStatus = code })
}

// fetch does one conditional GET and takes in a new body. It returns the
// HTTP status (0 when there was no response) and a *fetchError.
func (h *HTTP) fetch(ctx context.Context) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.rawURL, nil)
	if err != nil {
		return 0, &fetchError{unreachable, timefloor.ExplainTLS(h.clean(err), time.Now())}
	}
	req.Header = h.cfg.Header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	// Conditional only while the accepted bundle is fresh: once it has
	// expired, the server must send a new one (a 304 is then an error), so
	// that answering 304 cannot hold the device on it unnoticed.
	if h.hasAcc && (h.acc.notAfter.IsZero() || h.cfg.Clock.Now().Before(h.acc.notAfter)) {
		if h.acc.etag != "" {
			req.Header.Set("If-None-Match", h.acc.etag)
		}
		if h.acc.lastModified != "" {
			req.Header.Set("If-Modified-Since", h.acc.lastModified)
		}
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return 0, &fetchError{unreachable, h.clean(err)}
	}
	defer resp.Body.Close()
	code := resp.StatusCode
	switch code {
	case http.StatusNotModified:
		h.mu.Lock()
		h.st.NotModified++
		h.mu.Unlock()
		if req.Header.Get("If-None-Match") == "" && req.Header.Get("If-Modified-Since") == "" {
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
		return code, &fetchError{unreachable, fmt.Errorf("GET %s: reading body: %w", h.url, h.clean(err))}
	}
	if int64(len(body)) > h.cfg.MaxBody {
		return code, &fetchError{badContent, fmt.Errorf("%s: body larger than %s: %w", h.url, sizeText(h.cfg.MaxBody), ErrTooLarge)}
	}
	return code, h.accept(ctx, body, resp.Header)
}

// clean rewrites a client error: net/http's *url.Error names the URL it
// requested, secrets included, so it is replaced by the redacted URL; and
// the addresses (ephemeral local ports) of a network error are dropped, so
// that the same failure has the same text on every poll and is reported
// once.
func (h *HTTP) clean(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return fmt.Errorf("GET %s: %s %s: %w", h.url, op.Op, op.Net, op.Err)
	}
	if ue != nil {
		return fmt.Errorf("GET %s: %w", h.url, err)
	}
	return err
}

func sizeText(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// accept takes in a 200 body: unchanged bytes cost nothing; new ones are
// verified, parsed, checkpointed and reported. The validators (ETag,
// Last-Modified) are kept only with a body that was accepted, and only
// when short.
func (h *HTTP) accept(ctx context.Context, body []byte, hdr http.Header) error {
	etag, lastMod := capValidator(hdr.Get("ETag")), capValidator(hdr.Get("Last-Modified"))
	hash := sha256Hex(body)
	now := h.cfg.Clock.Now()
	if h.hasAcc && hash == h.acc.hash {
		if !h.acc.notAfter.IsZero() && now.After(h.acc.notAfter) {
			// The applied bundle, served again after its expiry: it keeps
			// running, but the server (or whoever answers for it) is not
			// sending anything new, and that shows.
			return &fetchError{badContent, fmt.Errorf("%s: %w: bundle version %d expired at %s and no newer one is served",
				h.url, bundle.ErrExpired, h.acc.version, h.acc.notAfter.Format(time.RFC3339))}
		}
		h.acc.etag, h.acc.lastModified = etag, lastMod
		h.mu.Lock()
		h.st.ETag, h.st.LastModified = etag, lastMod
		h.mu.Unlock()
		return nil
	}
	content, b, err := h.open(body, now)
	if err != nil {
		return &fetchError{badContent, fmt.Errorf("%s: %w", h.url, err)}
	}
	parsed, err := h.parse(content)
	if err != nil {
		var fe *pod.FieldError
		if !errors.As(err, &fe) {
			err = fmt.Errorf("%s: %w", h.url, err)
		}
		return &fetchError{badContent, err}
	}
	acc := accepted{hash: hash, version: b.Version, windows: windowsOf(b), rollout: rolloutOf(b), notAfter: b.NotAfter, pods: parsed.Pods, objects: parsed.Objects, etag: etag, lastModified: lastMod, fetchedAt: now}
	h.take(ctx, acc, body, checkpoint{ETag: etag, LastModified: lastMod}, func(st *podview.FetchStatus) {
		st.ETag, st.LastModified = etag, lastMod
	}, "manifest URL content accepted", "sha256", hash)
	return nil
}
