package source

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"tug/internal/bundle"
	"tug/internal/clock"
	"tug/internal/manifest"
	"tug/internal/pod"
	"tug/internal/podview"
)

// remote is what the URL and the OCI source share, each embedding one: the
// content accepted last, its checkpoint, the reports to the sink, the
// status, and the log of failures. A source adds how it fetches.
//
// It reports the accepted content: the checkpoint at start (before any
// request), then each new, verified, parsed body. A failure keeps the
// accepted content: the source reports its Hash with the error (the store
// keeps the last good pods), once per distinct error text. Until something
// was accepted (no usable checkpoint, nothing fetched), a failure of any
// kind reports nothing, so the source stays not ready and removes no pods.
type remote struct {
	name   string // the source's name: its reports' Origin and the checkpoint's URL
	sink   Sink
	log    *slog.Logger
	origin pod.Origin
	words  remoteWords

	keys       []ed25519.PublicKey // VerifyKeys
	hostname   string
	checkpoint string // its path; "" for none
	clock      clock.Clock

	// State owned by Run.
	acc         accepted
	hasAcc      bool
	minVersion  uint64      // the highest bundle version accepted (or checkpointed)
	reportedErr string      // the error of the last Set; "" when it was the accepted content
	failing     string      // the error last logged; "" when ok
	ckptErr     string      // the checkpoint write error last logged
	pending     *checkpoint // the accepted content's, not written while the sink holds it

	parses atomic.Int64 // for tests: bodies parsed

	mu sync.Mutex
	st podview.FetchStatus
}

// remoteWords name a source in its log lines and errors.
type remoteWords struct {
	source string // "manifest URL": "<source> failing", "cannot write <source> checkpoint"
	peer   string // "the URL": "its pods stay until <peer> answers well"
	target string // "URL": "checkpoint ... is for ..., not this <target>"
}

// accepted is the content the source last took in.
type accepted struct {
	hash         string
	version      uint64    // of the signed bundle; 0 for a bare body
	notAfter     time.Time // of the signed bundle
	pods         []*pod.Pod
	objects      []*pod.Object
	etag         string
	lastModified string
	fetchedAt    time.Time
	digest       string // the OCI source's artifact manifest digest
	windows      pod.Windows
	rollout      pod.Rollout
}

// windowsOf returns the update windows a bundle's header sets.
func windowsOf(h bundle.EnvelopeHeader) pod.Windows {
	return pod.Windows{Update: h.UpdateWindow, Download: h.DownloadWindow}
}

// rolloutOf returns the rollout plan and halt a bundle's header sets.
func rolloutOf(h bundle.EnvelopeHeader) pod.Rollout {
	var r pod.Rollout
	if h.Rollout != nil {
		b, _ := json.Marshal(h.Rollout)
		r.Plan = string(b)
	}
	if h.Halt != nil {
		b, _ := json.Marshal(h.Halt)
		r.Halt = string(b)
	}
	return r
}

func newRemote(name string, words remoteWords, keys []ed25519.PublicKey, hostname, checkpoint string, c clock.Clock, sink Sink, log *slog.Logger) remote {
	return remote{
		name: name, sink: sink, log: log.With("source", name), origin: pod.Origin{Source: name, File: name}, words: words,
		keys: keys, hostname: hostname, checkpoint: checkpoint, clock: c,
	}
}

// Status returns what the source last saw. Safe for concurrent use.
func (r *remote) Status() podview.FetchStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.st
}

// setStatus changes the status under its lock.
func (r *remote) setStatus(f func(st *podview.FetchStatus)) {
	r.mu.Lock()
	f(&r.st)
	r.mu.Unlock()
}

// start forgets any state of an earlier Run, then loads the checkpoint and
// reports its content; status adds the source's own fields of it.
func (r *remote) start(ctx context.Context, status func(st *podview.FetchStatus, acc accepted)) {
	r.acc, r.hasAcc, r.minVersion = accepted{}, false, 0
	r.reportedErr, r.failing, r.ckptErr, r.pending = "", "", "", nil
	r.setStatus(func(st *podview.FetchStatus) { *st = podview.FetchStatus{} })
	if r.checkpoint == "" {
		return
	}
	acc, err := r.loadCheckpoint()
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		r.log.Warn(fmt.Sprintf("ignoring %s checkpoint; its pods stay until %s answers well", r.words.source, r.words.peer),
			"file", r.checkpoint, "err", err)
		return
	}
	r.acc, r.hasAcc = acc, true
	r.minVersion = max(r.minVersion, acc.version)
	r.setStatus(func(st *podview.FetchStatus) {
		st.CheckpointTime, st.FromCheckpoint = acc.fetchedAt, true
		status(st, acc)
	})
	attrs := []any{"path", r.checkpoint}
	if acc.digest != "" {
		attrs = append(attrs, "digest", acc.digest)
	}
	r.log.Info(fmt.Sprintf("starting %s pods from checkpoint", r.words.source), append(attrs, "fetched", acc.fetchedAt, "pods", len(acc.pods))...)
	r.report(ctx, nil)
}

// loadCheckpoint reads the checkpoint. Its bundle version is the floor
// below which no bundle is accepted even when the checkpoint itself can no
// longer be used (say its key was retired). Its expiry is not checked: the
// device keeps running what it accepted while the server is away.
func (r *remote) loadCheckpoint() (accepted, error) {
	cp, err := readCheckpoint(r.checkpoint)
	if err != nil {
		return accepted{}, err
	}
	if cp.URL != r.name {
		return accepted{}, fmt.Errorf("checkpoint %s is for %q, not this %s", r.checkpoint, cp.URL, r.words.target)
	}
	r.minVersion = cp.BundleVersion
	content, b, err := r.open(cp.Body, time.Time{})
	if err != nil {
		return accepted{}, fmt.Errorf("checkpoint %s: %w", r.checkpoint, err)
	}
	parsed, err := r.parse(content)
	if err != nil {
		return accepted{}, fmt.Errorf("checkpoint %s: %w", r.checkpoint, err)
	}
	return accepted{
		hash: cp.SHA256, version: b.Version, windows: windowsOf(b), rollout: rolloutOf(b), notAfter: b.NotAfter, pods: parsed.Pods, objects: parsed.Objects,
		etag: capValidator(cp.ETag), lastModified: capValidator(cp.LastModified), fetchedAt: cp.FetchedAt, digest: cp.Digest,
	}, nil
}

// open checks a body through bundle.Open with the source's keys, node and
// version floor; now zero skips the expiry check (a checkpoint).
func (r *remote) open(body []byte, now time.Time) ([]byte, bundle.EnvelopeHeader, error) {
	return bundle.Open(body, bundle.Check{Keys: r.keys, Node: r.hostname, MinVersion: r.minVersion, Now: now})
}

func (r *remote) parse(body []byte) (manifest.Parsed, error) {
	r.parses.Add(1)
	return manifest.ParseFile(body, manifest.ParseOptions{Origin: r.origin, Hostname: r.hostname,
		Warn: func(w *pod.FieldError) {
			r.log.Warn("manifest: accepted, ignored on a node", "source", r.origin.Source, "err", w)
		}})
}

// polled records the outcome of a poll (err, a *fetchError, or nil) in the
// status (status, if not nil, adds the source's own fields) and the log,
// and reports what changed.
func (r *remote) polled(ctx context.Context, err error, status func(st *podview.FetchStatus)) {
	r.flushCheckpoint()
	now := r.clock.Now()
	r.setStatus(func(st *podview.FetchStatus) {
		st.LastFetch = now
		if err == nil {
			st.LastSuccess, st.Error, st.FromCheckpoint = now, "", false
		} else {
			st.Error = err.Error()
		}
		if status != nil {
			status(st)
		}
	})
	r.logState(err)
	switch {
	case err == nil:
		if r.reportedErr != "" {
			r.report(ctx, nil) // ok again with the accepted content: clear the error
		}
	case !r.hasAcc:
		// Nothing accepted: stay not ready rather than report no pods,
		// whatever the failure. The error shows in Status.
	case err.Error() != r.reportedErr:
		r.report(ctx, err)
	}
}

// report sends the accepted content, with err when the source is failing.
func (r *remote) report(ctx context.Context, err error) {
	m := pod.SourceFile{Origin: r.origin, Hash: r.acc.hash, Version: r.acc.version, Windows: r.acc.windows, Rollout: r.acc.rollout, Err: err}
	if err == nil {
		m.Pods, m.Objects = r.acc.pods, r.acc.objects
		r.reportedErr = ""
	} else {
		r.reportedErr = err.Error()
	}
	r.sink.Set(r.name, []pod.SourceFile{m})
}

func (r *remote) logState(err error) {
	text := errText(err)
	switch {
	case text == r.failing:
	case text != "":
		r.log.Warn(r.words.source+" failing, keeping the last accepted pods", "err", err)
	default:
		r.log.Info(r.words.source + " ok again")
	}
	r.failing = text
}

// take makes acc, verified and parsed from body, the accepted content:
// the version floor, the status (status adds the source's own fields), the
// objects' warnings, a log line (msg and attrs), the report, then the
// checkpoint cp (its URL, time, body and version filled in here) unless
// the sink holds the content (Holder).
func (r *remote) take(ctx context.Context, acc accepted, body []byte, cp checkpoint, status func(st *podview.FetchStatus), msg string, attrs ...any) {
	r.acc, r.hasAcc = acc, true
	r.minVersion = max(r.minVersion, acc.version)
	r.pending = nil
	if r.checkpoint != "" {
		cp.URL, cp.FetchedAt, cp.Body, cp.BundleVersion = r.name, acc.fetchedAt, body, acc.version
		r.pending = &cp
	}
	r.setStatus(func(st *podview.FetchStatus) {
		st.CheckpointTime, st.FromCheckpoint = acc.fetchedAt, false
		status(st)
	})
	for _, o := range acc.objects {
		for _, w := range o.Warnings {
			r.log.Warn(w)
		}
	}
	r.log.Info(msg, append(attrs, "version", acc.version, "pods", len(acc.pods), "objects", len(acc.objects))...)
	r.report(ctx, nil)
	r.flushCheckpoint()
}

// Holder is a Sink that may hold a source's content back from the store
// (windowgate.Gate, until the update window opens). A source checkpoints
// content only once its sink does not hold it, so that a restart starts
// what was applied, not what waits.
type Holder interface {
	Holds(source, hash string) bool
}

// flushCheckpoint writes the accepted content's checkpoint if it is
// pending and the sink does not hold the content; take and each poll call
// it.
func (r *remote) flushCheckpoint() {
	if r.pending == nil {
		return
	}
	if h, ok := r.sink.(Holder); ok && h.Holds(r.name, r.acc.hash) {
		return
	}
	err := writeCheckpoint(r.checkpoint, *r.pending)
	r.pending = nil
	if text := errText(err); text != r.ckptErr {
		if err != nil {
			r.log.Error("cannot write "+r.words.source+" checkpoint", "path", r.checkpoint, "err", err)
		}
		r.ckptErr = text
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
