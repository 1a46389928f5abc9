package reconcile

import (
	"context"
	"fmt"
	"sync"
	"time"

	"tug/internal/pod"
)

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

// postStart runs the PoststartHooks of container id of c, just started.
// When one fails, the container is stopped (its PrestopHooks first, as the
// kubelet runs a preStop handler), the failure becomes its waiting reason
// (PostStartHookError), the message of its terminated state and a
// FailedPostStartHook event, and the error is returned: the exit then goes
// the way of any exit, restarted under the restartPolicy after back-off.
func (s *podSyncer) postStart(ctx context.Context, p *pod.Pod, c *pod.Container, id string, sb pod.Sandbox) error {
	hctx := hookContext(ctx)
	var err error
	for _, k := range s.hooks.poststart {
		if err = k.Poststart(hctx, p, c, id, sb); err != nil {
			break
		}
	}
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
	if serr := s.stopContainer(ctx, p, c, r, p.GracePeriod(), func() pod.Sandbox { return sb }); serr != nil {
		s.log.Warn("stop container after postStart failure", "pod", p.FullName(), "uid", uid, "container", c.Name, "err", serr)
	}
	s.notes.wait(uid, c.Name, reasonPostStartHookError, msg)
	return fmt.Errorf("container %q: postStart: %w", c.Name, err)
}

// stopContainer stops running container r (spec c; nil when the manifest
// no longer has it) within grace: its PrestopHooks first, given at most
// grace, then the stop signal with what is left of grace. sb returns the
// pod's sandbox for a hook that needs it; nil: it is looked up then. A
// failed hook is an event (FailedPreStopHook) and the stop goes on.
func (s *podSyncer) stopContainer(ctx context.Context, p *pod.Pod, c *pod.Container, r pod.RuntimeContainer, grace time.Duration, sb func() pod.Sandbox) error {
	if r.State == pod.RunRunning && c != nil {
		if sb == nil {
			sb = s.sandboxLookup(ctx, p)
		}
		grace = s.hooks.prestopTime(ctx, s.now.Now, p, c, r.ID, sb, grace, func(err error) {
			s.event(p, c.Name, eventWarning, reasonFailedPreStopHook, "PreStopHook failed: "+err.Error())
			s.log.Warn("preStop hook failed", "pod", p.FullName(), "uid", p.Metadata.UID, "container", c.Name, "err", err)
		})
	}
	return s.rt.StopContainer(ctx, r.ID, grace)
}

// sandboxLookup returns a function that looks the running pod's sandbox up
// once, when first called, as far as a hook needs it (its network
// namespace and address) without creating anything. Safe for concurrent
// use, so that the concurrent stops of removeAll share one lookup.
func (s *podSyncer) sandboxLookup(ctx context.Context, p *pod.Pod) func() pod.Sandbox {
	return sync.OnceValue(func() pod.Sandbox {
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
	})
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
