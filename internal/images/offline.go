package images

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"tug/internal/pod"
)

// What an imagePullPolicy Always pull does when no registry host can be
// reached (Config.PullOffline).
const (
	// PullOfflineUseCached runs the image of the same reference that is
	// present, with a PullOfflineUsingCache warning and the pod condition
	// tug.io/ImageFromCache, until a pull succeeds again.
	PullOfflineUseCached = "use-cached"
	// PullOfflineFail fails the pull (ErrImagePull), as the kubelet does.
	PullOfflineFail = "fail"
)

// Unreachable reports whether err, a pull's error, says that no registry
// host could be reached: the HTTP client got no answer (a connection
// refused, reset or closed before any answer, a network or host
// unreachable, a DNS failure, a TLS handshake that failed), a connection
// broken while a blob came, a timeout (the pull's stall watchdog and
// PullTimeout included). An answer of the registry (401, 403, 404, "manifest unknown", a
// 5xx) is not: the registry was reached and said no. containerd's
// resolver returns a transport error only when every host of the registry
// failed so (an answer of any host outranks it).
func Unreachable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrPullStalled) || errors.Is(err, ErrPullTimeout) {
		return true
	}
	for _, errno := range []syscall.Errno{syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED,
		syscall.ENETUNREACH, syscall.EHOSTUNREACH, syscall.ENETDOWN, syscall.EHOSTDOWN, syscall.ETIMEDOUT, syscall.EPIPE} {
		if errors.Is(err, errno) {
			return true
		}
	}
	var (
		dnsErr      *net.DNSError
		netErr      net.Error
		recordErr   tls.RecordHeaderError
		alertErr    tls.AlertError
		verifyErr   *tls.CertificateVerificationError
		unknownAuth x509.UnknownAuthorityError
		hostErr     x509.HostnameError
		invalidCert x509.CertificateInvalidError
		urlErr      *url.Error
	)
	switch {
	case errors.As(err, &dnsErr), errors.As(err, &recordErr), errors.As(err, &alertErr), errors.As(err, &verifyErr),
		errors.As(err, &unknownAuth), errors.As(err, &hostErr), errors.As(err, &invalidCert):
		return true
	case errors.As(err, &netErr) && netErr.Timeout():
		return true
	case errors.As(err, &urlErr):
		// The HTTP client got no answer at all: the connection was closed
		// before one (a TCP relay whose backend is down does that), the
		// TLS handshake failed ("server gave HTTP response to HTTPS
		// client"), ... . Only a pull given up by its caller is not.
		return !errors.Is(urlErr.Err, context.Canceled)
	}
	return false
}

// cachedUse is an image that a pod runs from the store because its
// Always pull found no registry host.
type cachedUse struct {
	image     string // as the manifest writes it
	container string // the container whose start pulled it
	err       string // the pull's error
	since     time.Time
}

// cachedUses are the images that pods run from the store after an
// offline Always pull, by pod UID, then image. Safe for concurrent use.
type cachedUses struct {
	mu   sync.Mutex
	uses map[string]map[string]cachedUse
}

func (c *cachedUses) set(uid string, u cachedUse) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.uses == nil {
		c.uses = map[string]map[string]cachedUse{}
	}
	if c.uses[uid] == nil {
		c.uses[uid] = map[string]cachedUse{}
	}
	if old, ok := c.uses[uid][u.image]; ok {
		u.since = old.since // the condition has been True since then
	}
	c.uses[uid][u.image] = u
}

func (c *cachedUses) clear(uid, image string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.uses[uid], image)
	if len(c.uses[uid]) == 0 {
		delete(c.uses, uid)
	}
}

func (c *cachedUses) forget(uid string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.uses, uid)
}

// of returns the uses of p's images that p still names (a container's
// image or an image volume's reference), sorted by image.
func (c *cachedUses) of(p *pod.Pod) []cachedUse {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []cachedUse
	for image, u := range c.uses[p.Metadata.UID] {
		if podNames(p, image) {
			out = append(out, u)
		}
	}
	slices.SortFunc(out, func(a, b cachedUse) int { return strings.Compare(a.image, b.image) })
	return out
}

// podNames reports whether p names image, as a container's image or an
// image volume's reference.
func podNames(p *pod.Pod, image string) bool {
	for _, cs := range [][]pod.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range cs {
			if c.Image == image {
				return true
			}
		}
	}
	for _, v := range p.Spec.Volumes {
		if v.Image != nil && v.Image.Reference == image {
			return true
		}
	}
	return false
}

// ImageFromCacheCondition returns the tug.io/ImageFromCache condition of a
// pod that runs an image from the store because its imagePullPolicy
// Always pull found no registry host (PullOfflineUseCached): True, since
// the first such pull, its message naming each image and the pull's
// error. It is nil for any other pod, and once a pull of the image for
// the pod succeeds. Safe for concurrent use.
func (m *Manager) ImageFromCacheCondition(p *pod.Pod) *pod.Condition {
	uses := m.cached.of(p)
	if len(uses) == 0 {
		return nil
	}
	msgs := make([]string, 0, len(uses))
	since := uses[0].since
	for _, u := range uses {
		msgs = append(msgs, fmt.Sprintf("container %s runs the cached image %q: no registry host could be reached (%s)", u.container, u.image, u.err))
		if u.since.Before(since) {
			since = u.since
		}
	}
	return &pod.Condition{Type: pod.ConditionImageFromCache, Status: "True", LastTransitionTime: since,
		Reason: pod.ReasonPullOfflineUsingCache, Message: strings.Join(msgs, "; ")}
}

// ForgetPod drops what the Manager remembers of a pod that is gone (its
// tug.io/ImageFromCache condition, its pulls made ahead of a start). Safe
// for concurrent use.
func (m *Manager) ForgetPod(uid string) {
	m.cached.forget(uid)
	m.ahead.forget(uid)
}

// useCached is the PullOfflineUseCached fallback of a failed Always pull of
// r: the image present under ref, if the pull failed because no registry
// host could be reached and one is present; ok false otherwise.
func useCached[T any](ctx context.Context, m *Manager, r request, ref string, pullErr error, local func(context.Context, string) (T, error)) (img T, ok bool) {
	if m.cfg.PullOffline == PullOfflineFail || !Unreachable(pullErr) {
		return img, false
	}
	img, err := local(ctx, ref)
	if err != nil {
		return img, false
	}
	m.log.Warn("no registry host reachable, running the image present", "image", ref, "err", pullErr)
	m.event(r.pod, r.container, eventWarning, pod.ReasonPullOfflineUsingCache,
		fmt.Sprintf("Failed to pull image %q, no registry host reachable: running the cached image of that reference: %v", r.image, pullErr))
	if r.pod != nil {
		m.cached.set(r.pod.Metadata.UID, cachedUse{image: r.image, container: r.container, err: pullErr.Error(), since: time.Now()})
	}
	return img, true
}
