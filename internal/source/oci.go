package source

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/containerd/containerd/v2/pkg/reference"

	"tug/internal/bundle"
	"tug/internal/clock"
	"tug/internal/manifest"
	"tug/internal/pod"
	"tug/internal/podview"
	"tug/internal/timefloor"
)

// OCIPrefix starts the name of an OCI source: "oci://" and its reference.
const OCIPrefix = "oci://"

// OCIConfig configures an OCI source. The zero value of each field but Ref
// and Resolver means its default.
type OCIConfig struct {
	// Ref is the bundle artifact's reference (--manifest-oci), with its
	// registry host: host/repository:tag or host/repository@sha256:....
	Ref string
	// Resolver resolves and fetches Ref (required); the agent builds it
	// with the node's registry hosts and credentials.
	Resolver bundle.ArtifactResolver
	// Period is the wait between polls (--oci-check-frequency), with ±10%
	// jitter, doubled after each failure to reach the registry, to at most
	// 8 × Period (and 5 minutes, or Period when longer). Default 1m.
	Period time.Duration
	// Timeout bounds each poll, blobs included. Default 30s.
	Timeout time.Duration
	// MaxBody is the largest bundle layer accepted. Default 10 MiB.
	MaxBody int64
	// VerifyKeys, when set, make the layer a signed bundle (see bundle.Envelope)
	// mandatory; any one key verifies it.
	VerifyKeys []ed25519.PublicKey
	// Checkpoint is the path of this reference's checkpoint file; "" for
	// none.
	Checkpoint string
	// Hostname is appended to each pod name, and matched against a signed
	// bundle's node selector.
	Hostname string
	// Log receives the source's logs. Default: discard.
	Log *slog.Logger
	// Clock tells the time of pulls, of the checkpoint and of a bundle's
	// expiry; nil: the system clock.
	Clock clock.Clock
}

// DefaultMaxBundle is the largest bundle layer the OCI source accepts by
// default (as the URL source's body).
const DefaultMaxBundle = defaultMaxBody

const (
	defaultOCIPeriod  = time.Minute
	defaultOCITimeout = 30 * time.Second
	// maxBackoff caps the wait after failures to reach the registry (when
	// Period is shorter).
	maxBackoff = 5 * time.Minute
	// maxBackoffSteps is how many times the wait doubles.
	maxBackoffSteps = 3
)

// OCI is the manifest source of one bundle artifact in an OCI registry
// (the artifact's format: package bundle). Each report is one pod.SourceFile
// whose Origin.Source and Origin.File are its name, OCIPrefix+Ref.
//
// Each poll resolves the reference (one HEAD request); only a digest other
// than the applied one is pulled (manifest, then the bundle layer, each
// checked against its digest), checked by bundle.Open as the URL source
// checks a body, parsed, checkpointed and reported. A digest refused for
// its content (a blob that does not match its digest, not a bundle, a bad
// signature, an old, expired or foreign bundle, a parse error) is not
// pulled again; its error stays until the reference moves. As with the URL
// source, a failure keeps the accepted content (reported with the error),
// and until something was accepted a failure reports nothing, so the
// source stays not ready and removes no pods.
type OCI struct {
	remote
	cfg OCIConfig

	// State owned by Run.
	refused    string // the manifest digest last refused for its content
	refusedErr error  // and why
	failures   int    // polls in a row that could not reach the registry
}

// NewOCI checks the reference and returns a source that reports to sink.
// Nothing happens until Run.
func NewOCI(cfg OCIConfig, sink Sink) (*OCI, error) {
	spec, err := reference.Parse(cfg.Ref)
	if err != nil || spec.Object == "" {
		return nil, fmt.Errorf("source: OCI reference %q: want host/repository:tag or host/repository@digest", truncate(cfg.Ref, 200))
	}
	if cfg.Resolver == nil {
		return nil, errors.New("source: OCI source without a resolver")
	}
	if cfg.Period <= 0 {
		cfg.Period = defaultOCIPeriod
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = defaultOCITimeout
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = defaultMaxBody
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	for _, k := range cfg.VerifyKeys {
		if len(k) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("source: verify key: %d bytes, want %d", len(k), ed25519.PublicKeySize)
		}
	}
	o := &OCI{cfg: cfg}
	o.remote = newRemote(OCIPrefix+cfg.Ref, remoteWords{source: "OCI source", peer: "the registry", target: "reference"},
		cfg.VerifyKeys, cfg.Hostname, cfg.Checkpoint, cfg.Clock, sink, cfg.Log)
	return o, nil
}

// Name returns OCIPrefix and the reference. It is also the Origin.Source
// and Origin.File of the manifests it reports, so it is what pod UIDs and
// container labels derive from.
func (o *OCI) Name() string { return o.name }

// Run loads the checkpoint and reports it, then polls the reference at
// once and every Period (±10%, longer while the registry fails) until ctx
// is done; it then returns nil. Run must not be called again before it
// returned. It starts no goroutine.
func (o *OCI) Run(ctx context.Context) error {
	o.start(ctx)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		o.poll(ctx)
		t.Reset(jitter(backoff(o.cfg.Period, o.failures)))
	}
}

// backoff is the wait after failures polls in a row that could not reach
// the registry: period doubled per failure, up to maxBackoffSteps times,
// capped at maxBackoff (or period, when longer).
func backoff(period time.Duration, failures int) time.Duration {
	d := period << min(failures, maxBackoffSteps)
	return min(d, max(period, maxBackoff))
}

// start loads the checkpoint and reports it (remote.start).
func (o *OCI) start(ctx context.Context) {
	o.refused, o.refusedErr, o.failures = "", nil, 0
	o.remote.start(ctx, func(st *podview.FetchStatus, acc accepted) { st.Digest = acc.digest })
}

// poll checks the reference once and reports what changed.
func (o *OCI) poll(ctx context.Context) {
	pctx, cancel := context.WithTimeout(ctx, o.cfg.Timeout)
	err := o.fetch(pctx)
	cancel()
	if err != nil && ctx.Err() != nil {
		return // shutting down: the cancellation is not the registry's fault
	}
	var fe *fetchError
	if errors.As(err, &fe) && fe.class == unreachable {
		o.failures++
	} else {
		o.failures = 0
	}
	o.polled(ctx, err, nil)
}

// fetch resolves the reference and takes in a new digest. It returns a
// *fetchError.
func (o *OCI) fetch(ctx context.Context) error {
	_, desc, err := o.cfg.Resolver.Resolve(ctx, o.cfg.Ref)
	if err != nil {
		return &fetchError{unreachable, fmt.Errorf("resolve %s: %w", o.cfg.Ref, timefloor.ExplainTLS(err, time.Now()))}
	}
	dgst := desc.Digest.String()
	now := o.cfg.Clock.Now()
	if o.hasAcc && dgst == o.acc.digest {
		o.mu.Lock()
		o.st.NotModified++
		o.mu.Unlock()
		if !o.acc.notAfter.IsZero() && now.After(o.acc.notAfter) {
			return &fetchError{badContent, fmt.Errorf("%s: %w: bundle version %d expired at %s and the reference names no newer one",
				o.name, bundle.ErrExpired, o.acc.version, o.acc.notAfter.Format(time.RFC3339))}
		}
		return nil
	}
	if dgst == o.refused {
		o.mu.Lock()
		o.st.NotModified++
		o.mu.Unlock()
		return o.refusedErr
	}
	a, err := bundle.FetchResolved(ctx, o.cfg.Resolver, o.cfg.Ref, desc, o.cfg.MaxBody)
	var be *bundle.BlobError
	switch {
	case errors.As(err, &be) || errors.Is(err, bundle.ErrNotBundle):
		return o.refuse(dgst, fmt.Errorf("%s: %s: %w", o.name, dgst, err))
	case err != nil:
		return &fetchError{unreachable, fmt.Errorf("%s: %s: %w", o.name, dgst, timefloor.ExplainTLS(err, time.Now()))}
	}
	o.mu.Lock()
	o.st.FullResponses++
	o.mu.Unlock()
	content, b, err := o.open(a.Body, now)
	if err != nil {
		return o.refuse(dgst, fmt.Errorf("%s: %s: %w", o.name, dgst, err))
	}
	parsed, err := o.parse(content)
	if err != nil {
		var fe *pod.FieldError
		if !errors.As(err, &fe) {
			err = fmt.Errorf("%s: %w", o.name, err)
		}
		return o.refuse(dgst, err)
	}
	o.accept(ctx, a, b, parsed, now)
	return nil
}

// refuse remembers that the artifact dgst was refused for err.
func (o *OCI) refuse(dgst string, err error) error {
	fe := &fetchError{badContent, err}
	o.refused, o.refusedErr = dgst, fe
	return fe
}

// accept takes in a verified, parsed artifact: checkpoint, status, report.
func (o *OCI) accept(ctx context.Context, a bundle.Artifact, b bundle.EnvelopeHeader, parsed manifest.Parsed, now time.Time) {
	dgst := a.Manifest.Digest.String()
	o.refused, o.refusedErr = "", nil
	acc := accepted{hash: sha256Hex(a.Body), version: b.Version, windows: windowsOf(b), rollout: rolloutOf(b), notAfter: b.NotAfter, pods: parsed.Pods, objects: parsed.Objects,
		fetchedAt: now, digest: dgst}
	o.take(ctx, acc, a.Body, checkpoint{Digest: dgst}, func(st *podview.FetchStatus) { st.Digest = dgst }, "OCI bundle accepted", "digest", dgst)
}

// truncate shortens s, from a configuration, to n bytes for an error.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
