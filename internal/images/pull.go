package images

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	ctrimages "github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/core/leases"
	"github.com/containerd/containerd/v2/core/remotes"

	"tug/internal/pod"
	"tug/internal/timefloor"
)

// Event reasons and types of image pulls, the kubelet's.
const (
	reasonPulling = "Pulling"
	reasonPulled  = "Pulled"
	reasonFailed  = "Failed"
	eventNormal   = "Normal"
	eventWarning  = "Warning"
)

// pullLeaseExpiry is the expiry of a pull's lease: how long the content
// of a failed pull is kept for the next attempt to resume from, and the
// bound on a lease tug dies holding (containerd's client uses the same).
const pullLeaseExpiry = 24 * time.Hour

// Ensure makes c's image present and unpacked for the snapshotter,
// honouring its imagePullPolicy:
//
//   - Never: the image must already be present (ErrImageNotPresent if not);
//   - IfNotPresent: a present image is used, else it is pulled;
//   - Always: the image is pulled. If no registry host can be reached
//     (Unreachable) and Config.PullOffline is PullOfflineUseCached, the
//     image of that reference that is present runs: a
//     PullOfflineUsingCache warning says so, and the pod has the
//     tug.io/ImageFromCache condition until a pull of the image succeeds.
//     Any other failure (or PullOfflineFail) fails, as in the kubelet.
//
// It is the one place that records the events of a container's image, as
// the kubelet words them: Pulling when a pull starts (and, while a pull
// lasts, its progress every pullEventEvery), then Pulled ("Successfully
// pulled image ...") or a Failed warning; Pulled ("... already present on
// machine") when no pull is needed.
func (m *Manager) Ensure(ctx context.Context, p *pod.Pod, c *pod.Container) (containerd.Image, error) {
	return ensure(m.ctx(ctx), m, request{pod: p, container: c.Name, image: c.Image, policy: PullPolicy(c), unpack: true}, m.Local)
}

// EnsureAhead is Ensure for a container about to replace a running one
// (the sync loop pulls its image before the old container stops): the
// start that follows, Ensure of the same pod, container and image within
// aheadFor, uses the image this call made present instead of pulling it a
// second time, so an Always image is pulled once per start.
func (m *Manager) EnsureAhead(ctx context.Context, p *pod.Pod, c *pod.Container) (containerd.Image, error) {
	r := request{pod: p, container: c.Name, image: c.Image, policy: PullPolicy(c), unpack: true, ahead: true}
	return ensure(m.ctx(ctx), m, r, m.Local)
}

// request is one image a pod needs: a container's, or an image volume's
// (unpack false: the pull does not unpack it, the volume's own unpack
// does).
type request struct {
	pod       *pod.Pod
	container string // the container the events name
	image     string // as the manifest writes it
	policy    pod.PullPolicy
	unpack    bool
	ahead     bool // pulled ahead of a start: the start does not pull it again
}

// ensure makes r.image present as r.policy says (see Ensure), local
// returning the image present under a normalised reference (or an error
// wrapping ErrImageNotPresent), and returns what local returns.
func ensure[T any](ctx context.Context, m *Manager, r request, local func(context.Context, string) (T, error)) (T, error) {
	var zero T
	ref, err := NormalizeRef(r.image)
	if err != nil {
		return zero, err
	}
	switch r.policy {
	case pod.PullNever:
		img, err := local(ctx, ref)
		if errors.Is(err, ErrImageNotPresent) {
			err = fmt.Errorf("%w: %w", pod.ErrImageNeverPull, err)
		}
		if err == nil {
			m.present(r)
		}
		return img, err
	case pod.PullIfNotPresent:
		img, err := local(ctx, ref)
		if err == nil {
			m.present(r)
			return img, nil
		}
		if !errors.Is(err, ErrImageNotPresent) {
			return zero, err
		}
		if err := m.pullFor(ctx, r, ref); err != nil {
			m.failed(ctx, r, err)
			return zero, err
		}
		m.pulledFor(r)
		return local(ctx, ref)
	default: // Always
		if !r.ahead && m.ahead.take(r, time.Now()) {
			if img, err := local(ctx, ref); err == nil {
				return img, nil // pulled ahead of this start; its events are recorded
			}
		}
		err := m.pullFor(ctx, r, ref)
		if err == nil {
			m.pulledFor(r)
			if r.ahead {
				m.ahead.mark(r, time.Now())
			}
			return local(ctx, ref)
		}
		if ctx.Err() == nil {
			if img, ok := useCached(ctx, m, r, ref, err, local); ok {
				return img, nil
			}
		}
		m.failed(ctx, r, err)
		if derr := m.presentDamage(ctx, r, ref); derr != nil {
			// containerd takes a blob it has for fetched, so a pull over
			// damaged content fails on it every time: a repair, not a
			// retry.
			return zero, fmt.Errorf("%w (pull: %v)", derr, err)
		}
		return zero, err
	}
}

// pulledFor forgets that r's pod ran r's image from the store.
func (m *Manager) pulledFor(r request) {
	m.undeferred(r)
	if r.pod != nil {
		m.cached.clear(r.pod.Metadata.UID, r.image)
	}
}

// failed records the Failed warning of r's pull, unless the caller gave up,
// or, for a pull that does not fit on the image filesystem, its
// ImagePullDeferred warning once per wait (room.go).
func (m *Manager) failed(ctx context.Context, r request, err error) {
	if m.deferred(r, err) {
		return
	}
	m.undeferred(r)
	if ctx.Err() == nil {
		m.event(r.pod, r.container, eventWarning, reasonFailed, fmt.Sprintf("Failed to pull image %q: %v", r.image, err))
	}
}

// event records an event when the Manager has a recorder.
func (m *Manager) event(p *pod.Pod, container, eventType, reason, message string) {
	if m.cfg.Recorder != nil {
		m.cfg.Recorder.Event(p, container, eventType, reason, message)
	}
}

// present records that r's image needs no pull.
func (m *Manager) present(r request) {
	m.event(r.pod, r.container, eventNormal, reasonPulled, fmt.Sprintf("Container image %q already present on machine", r.image))
}

// pullFor pulls ref for r and records its Pulling and Pulled events (the
// caller records a failure: see failed), and a Pulling event with the
// pull's progress ("Pulling image \"IMAGE\": 43.1 MB of 120.6 MB") every
// pullEventEvery while it lasts. The Pulled event's first duration is the
// registry pull's, as far as this caller waited for it (a caller may join
// a pull under way); the second is the whole wait.
func (m *Manager) pullFor(ctx context.Context, r request, ref string) error {
	m.event(r.pod, r.container, eventNormal, reasonPulling, fmt.Sprintf("Pulling image %q", r.image))
	began := time.Now()
	call, err := m.pull(ctx, ref, m.keyringFor(r.pod), r.unpack, func(s sample) {
		m.event(r.pod, r.container, eventNormal, reasonPulling, fmt.Sprintf("Pulling image %q: %s", r.image, s))
	})
	if err != nil {
		return err
	}
	waited := time.Since(began)
	m.event(r.pod, r.container, eventNormal, reasonPulled, fmt.Sprintf("Successfully pulled image %q in %s (%s including waiting). Image size: %d bytes.%s",
		r.image, min(call.took, waited).Truncate(time.Millisecond), waited.Truncate(time.Millisecond), call.size, call.from.eventNote()))
	return nil
}

// pullCall is one registry pull that concurrent callers share.
type pullCall struct {
	ref   string    // normalised reference
	began time.Time // when the registry pull started

	done chan struct{} // closed when the fields below are set
	img  containerd.Image
	size int64         // the image's content size, for the Pulled event
	took time.Duration // how long the registry pull took
	err  error
	from servedBy // the registry hosts that answered (served.go)

	mu   sync.Mutex
	last *sample // the last progress read; nil before the first
}

func (c *pullCall) setSample(s sample) {
	c.mu.Lock()
	c.last = &s
	c.mu.Unlock()
}

func (c *pullCall) sample() *sample {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// pull pulls ref, and unpacks it when unpack is set (an image volume's
// artifact is not unpacked here: see EnsureVolume). Concurrent pulls of the
// same ref share one registry pull; the pull runs detached from any one
// caller's context, bounded by its progress (PullProgressDeadline) and
// PullTimeout, so a caller that gives up does not fail the others. While
// the caller waits, progress (if not nil) is shown the pull's progress
// pullEventAfter after the caller began, then every pullEventEvery.
func (m *Manager) pull(ctx context.Context, ref string, k keyring, unpack bool, progress func(sample)) (*pullCall, error) {
	m.pullMu.Lock()
	key := ref + "\x00" + k.fingerprint() // a pull shares only the same credentials
	if !unpack {
		key += "\x00volume"
	}
	call, ok := m.pulls[key]
	if !ok {
		call = &pullCall{ref: ref, began: time.Now(), done: make(chan struct{})}
		m.pulls[key] = call
		go func() {
			img, size, err := m.doPull(context.WithoutCancel(ctx), call, m.resolverFor(ctx, k, &call.from), unpack)
			took := time.Since(call.began)
			m.pullMu.Lock()
			delete(m.pulls, key)
			m.pullMu.Unlock()
			call.img, call.size, call.took, call.err = img, size, took, err
			close(call.done)
		}()
	}
	m.pullMu.Unlock()
	tick := time.NewTimer(pullEventAfter)
	defer tick.Stop()
	for {
		select {
		case <-call.done:
			if call.err != nil {
				return nil, call.err
			}
			return call, nil
		case <-ctx.Done():
			return nil, fmt.Errorf("pull image %q: %w", ref, ctx.Err())
		case <-tick.C:
			if s := call.sample(); s != nil && s.Total > 0 && progress != nil {
				progress(*s)
			}
			tick.Reset(pullEventEvery)
		}
	}
}

// doPull runs one registry pull of call.ref under a lease of its own, with
// a watchdog that cuts it when it stalls or runs out of time. It returns
// the image and its content size.
func (m *Manager) doPull(ctx context.Context, call *pullCall, resolver remotes.Resolver, unpack bool) (containerd.Image, int64, error) {
	ref := call.ref
	ctx, cut := context.WithCancelCause(ctx)
	defer cut(nil)
	ctx, release, err := m.pullLease(ctx, ref)
	if err != nil {
		return nil, 0, fmt.Errorf("pull image %q: %w: %w", ref, pod.ErrImagePull, err)
	}
	failed := true
	defer func() { release(failed) }()

	m.log.Info("pulling image", "image", ref)
	progress := newPullProgress(m.client.ContentStore())
	watchCtx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		wd := newWatchdog(m.cfg.PullProgressDeadline, m.cfg.PullTimeout, call.began)
		lastLog := time.Now()
		err := watch(watchCtx, progress, wd, func(s sample) {
			call.setSample(s)
			if time.Since(lastLog) >= progressLogEvery {
				lastLog = time.Now()
				m.log.Debug("pull progress", "image", ref, "done", s.Done, "total", s.Total)
			}
		})
		if err != nil {
			m.log.Warn("cutting image pull", "image", ref, "err", err)
			cut(err)
		}
	}()
	rc := &roomCheck{m: m, ref: ref, cut: cut}
	guarded := make(chan struct{})
	go func() {
		defer close(guarded)
		rc.guard(watchCtx)
	}()
	opts := []containerd.RemoteOpt{
		containerd.WithPullSnapshotter(m.cfg.Snapshotter),
		containerd.WithResolver(resolver),
		containerd.WithImageHandlerWrapper(func(h ctrimages.Handler) ctrimages.Handler { return progress.wrap(rc.wrap(h)) }),
	}
	if unpack {
		opts = append(opts, containerd.WithPullUnpack, containerd.WithUnpackOpts(m.unpackOpts()))
	}
	img, err := m.client.Pull(ctx, ref, opts...)
	stopWatch()
	<-watched
	<-guarded
	if err != nil {
		cause := context.Cause(ctx)
		if errors.Is(cause, ErrPullStalled) || errors.Is(cause, ErrPullTimeout) {
			err = cause // what cut the pull, rather than "context canceled"
		}
		if errors.Is(cause, pod.ErrImagePullDeferred) {
			return nil, 0, fmt.Errorf("pull image %q: %w", ref, cause) // a wait, not a failed pull
		}
		// A registry's certificate that is not valid by the device's
		// clock is said in words (a clock behind after a boot in 1970).
		return nil, 0, fmt.Errorf("pull image %q: %w: %w", ref, pod.ErrImagePull, timefloor.ExplainTLS(err, time.Now()))
	}
	failed = false
	if unpack {
		m.syncUnpacked(ctx, ref) // before the pull is reported done
	}
	size, err := img.Size(ctx)
	if err != nil {
		m.log.Warn("read the size of a pulled image", "image", ref, "err", err)
	}
	m.log.Info("pulled image", "image", ref, "digest", img.Target().Digest.String(), "size", size,
		"duration", time.Since(call.began).Round(time.Millisecond), "registry", call.from.String())
	return img, size, nil
}

// Partial pulls. A registry pull runs under a lease of its own, whose ID
// is derived from the reference ("tug-pull-" and 24 hex digits of its
// SHA-256, then a stamp that makes it unique), with a pullLeaseExpiry
// expiry. The lease holds the blobs the pull fetches and the ingests it
// writes (containerd's partial downloads, keyed by blob digest) until the
// image is created. On success the lease is deleted: the image holds the
// content. On failure (a broken connection, the stall watchdog, tug
// stopped or killed) it is kept, and the next pull of the same reference
// takes over what it holds: it adds the resources of every lease of that
// reference that no pull of this Manager holds to its own lease, then
// deletes them. containerd's fetch then opens each blob's ingest where it
// stopped and asks the registry for the rest only (a Range request), so a
// pull over a link that keeps breaking completes in pieces. Concurrent
// pulls of one reference (other credentials, an image volume's) each have
// a lease and never take over one another's. What a failed pull fetched
// stays on disk for up to pullLeaseExpiry after its last attempt unless a
// later pull of the reference succeeds, or the image GC frees it first
// under pressure (leftovers.go).

// pullLeasePrefix starts the ID of every pull's lease.
const pullLeasePrefix = "tug-pull-"

// pullLeaseBase is the part of the ID of a pull lease of ref that every
// pull of ref shares.
func pullLeaseBase(ref string) string {
	sum := sha256.Sum256([]byte(ref))
	return pullLeasePrefix + hex.EncodeToString(sum[:12]) + "-"
}

// pullLease returns ctx with a lease for a pull of ref that holds what it
// fetches, having taken over the leases of earlier pulls of ref that
// failed, and the function that ends it, on a context of its own (a pull
// cut by its context still ends its lease): failed keeps the lease for the
// next pull; success deletes it and every other lease of ref no pull
// holds.
func (m *Manager) pullLease(ctx context.Context, ref string) (context.Context, func(failed bool), error) {
	ls := m.client.LeasesService()
	base := pullLeaseBase(ref)
	id := base + strconv.FormatInt(time.Now().UnixNano(), 36)
	m.pullMu.Lock() // held before it exists: FreePullLeftovers never takes it
	if m.leasesHeld == nil {
		m.leasesHeld = map[string]bool{}
	}
	m.leasesHeld[id] = true
	m.pullMu.Unlock()
	l, err := ls.Create(ctx, leases.WithID(id), leases.WithExpiration(pullLeaseExpiry))
	if err != nil {
		m.pullMu.Lock()
		delete(m.leasesHeld, id)
		m.pullMu.Unlock()
		return nil, nil, fmt.Errorf("create lease: %w", err)
	}
	if n, err := m.takeOverLeases(ctx, l, base); err != nil {
		m.log.Warn("take over the content of earlier pulls", "image", ref, "err", err)
	} else if n > 0 {
		m.log.Info("resuming an earlier pull", "image", ref, "resources", n)
	}
	release := func(failed bool) {
		defer func() {
			m.pullMu.Lock()
			delete(m.leasesHeld, id)
			m.pullMu.Unlock()
		}()
		if failed {
			m.log.Debug("keeping what the failed pull fetched for the next one", "image", ref)
			return
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaseReleaseTimeout)
		defer cancel()
		if err := ls.Delete(rctx, l); err != nil {
			m.log.Warn("release image pull lease", "image", ref, "err", err)
		}
		if _, err := m.orphanLeases(rctx, base, func(old leases.Lease) error { return ls.Delete(rctx, old) }); err != nil {
			m.log.Warn("release the leases of earlier pulls", "image", ref, "err", err)
		}
	}
	return leases.WithLease(ctx, l.ID), release, nil
}

// takeOverLeases adds the resources of every lease of base that no pull
// holds to l, and deletes those leases. It returns how many resources it
// added.
func (m *Manager) takeOverLeases(ctx context.Context, l leases.Lease, base string) (int, error) {
	ls := m.client.LeasesService()
	return m.orphanLeases(ctx, base, func(old leases.Lease) error {
		res, err := ls.ListResources(ctx, old)
		if err != nil {
			return fmt.Errorf("list resources of lease %s: %w", old.ID, err)
		}
		for _, r := range res {
			if err := ls.AddResource(ctx, l, r); err != nil {
				return fmt.Errorf("add %s %s to lease %s: %w", r.Type, r.ID, l.ID, err)
			}
		}
		if err := ls.Delete(ctx, old); err != nil {
			return fmt.Errorf("delete lease %s: %w", old.ID, err)
		}
		return nil
	})
}

// orphanLeases calls fn with every lease whose ID starts with base that no
// pull of this Manager holds, and returns how many it was called with.
func (m *Manager) orphanLeases(ctx context.Context, base string, fn func(leases.Lease) error) (int, error) {
	all, err := m.client.LeasesService().List(ctx)
	if err != nil {
		return 0, fmt.Errorf("list leases: %w", err)
	}
	n := 0
	var errs []error
	for _, l := range all {
		if !strings.HasPrefix(l.ID, base) {
			continue
		}
		m.pullMu.Lock()
		held := m.leasesHeld[l.ID]
		m.pullMu.Unlock()
		if held {
			continue
		}
		if err := fn(l); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// PullMessage returns the waiting message of a container whose image is
// being pulled: `Pulling image "IMAGE"`, with the bytes fetched of the
// bytes known ("12.3 MB of 45.6 MB") once the pull has run for a few
// seconds. ok is false when no pull of image is under way. Safe for
// concurrent use.
func (m *Manager) PullMessage(image string) (msg string, ok bool) {
	ref, err := NormalizeRef(image)
	if err != nil {
		return "", false
	}
	m.pullMu.Lock()
	defer m.pullMu.Unlock()
	var best *sample
	for _, call := range m.pulls {
		if call.ref != ref {
			continue
		}
		ok = true
		if s := call.sample(); s != nil && (best == nil || s.Done > best.Done) {
			best = s
		}
	}
	if !ok {
		return "", false
	}
	msg = fmt.Sprintf("Pulling image %q", image)
	if best != nil && best.Total > 0 {
		msg += ": " + best.String()
	}
	return msg, true
}
