package images

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/leases"
	"github.com/containerd/containerd/v2/core/remotes"

	"tug/internal/pod"
)

// Event reasons and types of image pulls, the kubelet's.
const (
	reasonPulling = "Pulling"
	reasonPulled  = "Pulled"
	reasonFailed  = "Failed"
	eventNormal   = "Normal"
	eventWarning  = "Warning"
)

// pullLeaseExpiry is the expiry of a pull's lease, should tug die before
// it releases it (containerd's client uses the same).
const pullLeaseExpiry = 24 * time.Hour

// Ensure makes c's image present and unpacked for the snapshotter,
// honouring its imagePullPolicy:
//
//   - Never: the image must already be present (ErrImageNotPresent if not);
//   - IfNotPresent: a present image is used, else it is pulled;
//   - Always: the image is pulled; if the pull fails but an image of that
//     name is present, it is used with a warning, so that a device that is
//     offline keeps running what it has.
//
// It is the one place that records the events of a container's image, as
// the kubelet words them: Pulling when a pull starts, then Pulled
// ("Successfully pulled image ...") or a Failed warning; Pulled ("...
// already present on machine") when no pull is needed, or when a failed
// pull of an Always image falls back on the one present.
func (m *Manager) Ensure(ctx context.Context, p *pod.Pod, c *pod.Container) (containerd.Image, error) {
	return ensure(m.ctx(ctx), m, request{pod: p, container: c.Name, image: c.Image, policy: PullPolicy(c), unpack: true}, m.Local)
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
			return zero, err
		}
		return local(ctx, ref)
	default: // Always
		err := m.pullFor(ctx, r, ref)
		if err == nil || ctx.Err() != nil {
			if err != nil {
				return zero, err
			}
			return local(ctx, ref)
		}
		img, lerr := local(ctx, ref)
		if lerr != nil {
			return zero, err
		}
		m.log.Warn("pull failed, using the image that is present", "image", ref, "err", err)
		m.present(r)
		return img, nil
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

// pullFor pulls ref for r and records its events. The
// Pulled event's first duration is the registry pull's, as far as this
// caller waited for it (a caller may join a pull under way); the second
// is the whole wait.
func (m *Manager) pullFor(ctx context.Context, r request, ref string) error {
	m.event(r.pod, r.container, eventNormal, reasonPulling, fmt.Sprintf("Pulling image %q", r.image))
	began := time.Now()
	call, err := m.pull(ctx, ref, m.keyringFor(r.pod), r.unpack)
	if err != nil {
		if ctx.Err() == nil {
			m.event(r.pod, r.container, eventWarning, reasonFailed, fmt.Sprintf("Failed to pull image %q: %v", r.image, err))
		}
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
// same ref share one
// registry pull; the pull runs detached from any one caller's context,
// bounded by its progress (PullProgressDeadline) and PullTimeout, so a
// caller that gives up does not fail the others.
func (m *Manager) pull(ctx context.Context, ref string, k keyring, unpack bool) (*pullCall, error) {
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
	select {
	case <-call.done:
		if call.err != nil {
			return nil, call.err
		}
		return call, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("pull image %q: %w", ref, ctx.Err())
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
	opts := []containerd.RemoteOpt{
		containerd.WithPullSnapshotter(m.cfg.Snapshotter),
		containerd.WithResolver(resolver),
		containerd.WithImageHandlerWrapper(progress.wrap),
	}
	if unpack {
		opts = append(opts, containerd.WithPullUnpack)
	}
	img, err := m.client.Pull(ctx, ref, opts...)
	stopWatch()
	<-watched
	if err != nil {
		if cause := context.Cause(ctx); errors.Is(cause, ErrPullStalled) || errors.Is(cause, ErrPullTimeout) {
			err = cause // what cut the pull, rather than "context canceled"
		}
		return nil, 0, fmt.Errorf("pull image %q: %w: %w", ref, pod.ErrImagePull, err)
	}
	failed = false
	size, err := img.Size(ctx)
	if err != nil {
		m.log.Warn("read the size of a pulled image", "image", ref, "err", err)
	}
	m.log.Info("pulled image", "image", ref, "digest", img.Target().Digest.String(), "size", size,
		"duration", time.Since(call.began).Round(time.Millisecond), "registry", call.from.String())
	return img, size, nil
}

// pullLease returns ctx with a lease of its own that holds what a pull
// fetches until its image is created, and the function that releases it,
// on a context of its own (a pull cut by its context would otherwise leave
// the lease, and the content it holds, for a day). After a failed pull the
// release waits for containerd's garbage collection, so that the partial
// content it leaves is gone when the failure is reported.
func (m *Manager) pullLease(ctx context.Context, ref string) (context.Context, func(failed bool), error) {
	ls := m.client.LeasesService()
	l, err := ls.Create(ctx, leases.WithRandomID(), leases.WithExpiration(pullLeaseExpiry))
	if err != nil {
		return nil, nil, fmt.Errorf("create lease: %w", err)
	}
	release := func(failed bool) {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaseReleaseTimeout)
		defer cancel()
		var opts []leases.DeleteOpt
		if failed {
			opts = append(opts, leases.SynchronousDelete)
		}
		if err := ls.Delete(rctx, l, opts...); err != nil {
			m.log.Warn("release image pull lease", "image", ref, "err", err)
		}
	}
	return leases.WithLease(ctx, l.ID), release, nil
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
