package reconcile

import (
	"context"
	"time"

	"tug/internal/pod"
)

// unhealthy stops running container last of c when its liveness or
// startup probe failed, or when a restart of it was asked for (tug
// restart), and reports whether it did. The exit then goes the way of any
// exit: restarted under the pod's restartPolicy after its crash back-off
// (a requested restart at once, whatever the policy); the probe's message
// (or the request's) becomes the message of the container's terminated
// state.
func (s *podSyncer) unhealthy(ctx context.Context, p *pod.Pod, c *pod.Container, last *pod.RuntimeContainer, res *syncResult) bool {
	var (
		msg   string
		grace *int64
		bad   bool
		what  = "unhealthy container"
	)
	switch {
	case s.notes.restartRequested(p.Metadata.UID, last.ID):
		// The prober records its own Killing event; a request records
		// it here.
		msg, bad, what = restartMessage, true, "container to restart it"
		s.event(p, c.Name, eventNormal, reasonKilling, "Container "+c.Name+" "+restartMessage)
	default:
		msg, grace, bad = s.hooks.unhealthy(last.ID)
	}
	if !bad {
		return false
	}
	s.notes.killedFor(p.Metadata.UID, last.ID, msg)
	g := p.GracePeriod()
	if grace != nil {
		g = time.Duration(*grace) * time.Second
	}
	s.log.Info("killing "+what, "pod", p.FullName(), "uid", p.Metadata.UID, "container", c.Name, "err", msg)
	if err := s.stopContainer(ctx, p, c, *last, g, nil); err != nil {
		s.log.Warn("stop "+what, "pod", p.FullName(), "uid", p.Metadata.UID, "container", c.Name, "err", err)
	}
	res.after(time.Millisecond) // read the exit back and restart it
	return true
}
