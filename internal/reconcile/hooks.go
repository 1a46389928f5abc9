package reconcile

import (
	"context"
	"fmt"
	"time"

	"tug/internal/pod"
)

// Hooks runs a container's lifecycle hooks (implemented by prober.Hooks).
type Hooks interface {
	// Run runs hook h of container c (its ID id) of pod p, whose sandbox
	// is sb, until it is done or ctx ends, and says why it failed.
	Run(ctx context.Context, p *pod.Pod, c *pod.Container, id string, sb pod.Sandbox, h *pod.LifecycleHandler) error
}

// The kubelet's reasons for hook failures: the events, and the waiting
// reason of a container whose postStart hook failed.
const (
	reasonFailedPostStartHook = "FailedPostStartHook"
	reasonFailedPreStopHook   = "FailedPreStopHook"
	reasonPostStartHookError  = "PostStartHookError"
)

// minStopGrace is what a container always gets between its stop signal
// and SIGKILL after a preStop hook used its grace period up (the
// kubelet's minimumGracePeriodInSeconds).
const minStopGrace = 2 * time.Second

// hookCtxKey carries, in a sync's context, the context that a newer
// update or the pod's removal cancels (syncPod's wait): a postStart hook
// runs under it, so that a hook that never returns does not keep the pod
// from being removed, while the stops and removals of the sync itself
// run to their end under ctx.
type hookCtxKey struct{}

// withHookContext returns ctx carrying wait for the hooks run under it.
func withHookContext(ctx, wait context.Context) context.Context {
	return context.WithValue(ctx, hookCtxKey{}, wait)
}

// hookContext returns the context a postStart hook runs under: the wait
// context ctx carries, else ctx.
func hookContext(ctx context.Context) context.Context {
	if w, ok := ctx.Value(hookCtxKey{}).(context.Context); ok && w != nil {
		return w
	}
	return ctx
}

// postStart runs c's postStart hook in container id, just started. When
// it fails, the container is stopped (its preStop hook first, as the
// kubelet does), the failure becomes its waiting reason
// (PostStartHookError), the message of its terminated state and a
// FailedPostStartHook event, and the error is returned: the exit then goes
// the way of any exit, restarted under the restartPolicy after back-off.
func (s *podSyncer) postStart(ctx context.Context, p *pod.Pod, c *pod.Container, id string, sb pod.Sandbox) error {
	if s.hooks == nil || c.Lifecycle == nil || c.Lifecycle.PostStart == nil {
		return nil
	}
	hctx := hookContext(ctx)
	err := s.hooks.Run(hctx, p, c, id, sb, c.Lifecycle.PostStart)
	if err == nil {
		return nil
	}
	if hctx.Err() != nil {
		// tug is stopping, or a newer version of the pod (its removal)
		// cut the hook: the container is left running, and the next sync
		// (or the kill) deals with it.
		return fmt.Errorf("container %q: postStart interrupted: %w", c.Name, err)
	}
	uid := p.Metadata.UID
	msg := "PostStartHook failed: " + err.Error()
	s.event(p, c.Name, eventWarning, reasonFailedPostStartHook, msg)
	s.log.Warn("postStart hook failed; stopping the container", "pod", p.FullName(), "uid", uid, "container", c.Name, "err", err)
	s.notes.killedFor(uid, id, msg)
	r := pod.RuntimeContainer{ID: id, Name: c.Name, State: pod.RunRunning}
	if serr := s.stopContainer(ctx, p, c, r, p.GracePeriod(), &sb); serr != nil {
		s.log.Warn("stop container after postStart failure", "pod", p.FullName(), "uid", uid, "container", c.Name, "err", serr)
	}
	s.notes.wait(uid, c.Name, reasonPostStartHookError, msg)
	return fmt.Errorf("container %q: postStart: %w", c.Name, err)
}

// stopContainer stops running container r (spec c; nil when the manifest
// no longer has it) within grace: c's preStop hook first, given at most
// grace, then the stop signal with what is left of grace (never less than
// minStopGrace). sb is the pod's sandbox when the caller has it; nil: it
// is looked up when a network hook needs it. A failed preStop hook is an
// event (FailedPreStopHook) and the stop goes on.
func (s *podSyncer) stopContainer(ctx context.Context, p *pod.Pod, c *pod.Container, r pod.RuntimeContainer, grace time.Duration, sb *pod.Sandbox) error {
	if r.State == pod.RunRunning && s.hooks != nil && c != nil && c.Lifecycle != nil && c.Lifecycle.PreStop != nil && grace > 0 {
		start := s.now.Now()
		hctx, cancel := context.WithTimeout(ctx, grace)
		h := c.Lifecycle.PreStop
		var hsb pod.Sandbox
		if h.HTTPGet != nil || h.TCPSocket != nil {
			hsb = s.hookSandbox(ctx, p, sb)
		}
		err := s.hooks.Run(hctx, p, c, r.ID, hsb, h)
		cancel()
		if err != nil {
			msg := "PreStopHook failed: " + err.Error()
			s.event(p, c.Name, eventWarning, reasonFailedPreStopHook, msg)
			s.log.Warn("preStop hook failed", "pod", p.FullName(), "uid", p.Metadata.UID, "container", c.Name, "err", err)
		}
		grace = max(grace-s.now.Now().Sub(start), minStopGrace)
	}
	return s.rt.StopContainer(ctx, r.ID, grace)
}

// preStopSandbox returns the pod's sandbox when one of the running
// containers in recs has a network preStop hook (httpGet, tcpSocket), so
// that concurrent stops do not each look it up; nil otherwise.
func (s *podSyncer) preStopSandbox(ctx context.Context, p *pod.Pod, recs []pod.RuntimeContainer) *pod.Sandbox {
	if s.hooks == nil {
		return nil
	}
	for _, r := range recs {
		c := containerSpec(p, r.Name)
		if r.State != pod.RunRunning || c == nil || c.Lifecycle == nil || c.Lifecycle.PreStop == nil {
			continue
		}
		if h := c.Lifecycle.PreStop; h.HTTPGet != nil || h.TCPSocket != nil {
			sb := s.hookSandbox(ctx, p, nil)
			return &sb
		}
	}
	return nil
}

// hookSandbox returns sb, or the running pod's sandbox as far as a hook
// needs it (its network namespace and address) without creating anything.
func (s *podSyncer) hookSandbox(ctx context.Context, p *pod.Pod, sb *pod.Sandbox) pod.Sandbox {
	if sb != nil {
		return *sb
	}
	var out pod.Sandbox
	if ns, err := s.sb.EnsureNamespaces(ctx, p); err == nil {
		out.Namespaces = ns
	}
	if p.Spec.HostNetwork {
		if ip := s.net.HostIP(); ip.IsValid() {
			out.IP = ip.String()
		}
	} else {
		out.IP = s.notes.podIP(p.Metadata.UID)
	}
	return out
}

// podIP returns the address noted for pod uid ("" when none).
func (n *statusNotes) podIP(uid string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if pn := n.pods[uid]; pn != nil {
		return pn.ip
	}
	return ""
}

// containerSpec returns p's container or init container of that name, or
// nil.
func containerSpec(p *pod.Pod, name string) *pod.Container {
	for i := range p.Spec.Containers {
		if p.Spec.Containers[i].Name == name {
			return &p.Spec.Containers[i]
		}
	}
	return initContainer(p, name)
}
