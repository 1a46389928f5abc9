package reconcile

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"tug/internal/pod"
	"tug/internal/podplan"
)

// A ResizeHook resizes running containers in place when only their
// resources change (KEP-1287; resize.Hook): Fits says whether a pod's
// resized requests fit the node ("" when they do, else Infeasible or
// Deferred and why), Resize resizes one container to want, its spec hash
// becoming hash. The first ResizeHook listed resizes; without one, a
// change of resources recreates the container.
type ResizeHook interface {
	Hook
	Fits(p *pod.Pod) (reason, msg string)
	Resize(ctx context.Context, it podplan.ResizeItem, c *pod.Container, want pod.LinuxResources, hash string) error
}

// The reasons of the resize conditions tug reports besides the
// ResizeHook's.
const (
	reasonResizeError = "Error"
	reasonResized     = "Resized"
)

// resizeRetry is how often a resize that waits (Deferred, or a memory
// limit below the usage) is tried again.
const resizeRetry = 5 * time.Second

// planResize is p's podplan.Resize with the QoS tree's answers; it notes
// a refused resize (PodResizePending) and clears the conditions when
// there is none.
func (s *podSyncer) planResize(p *pod.Pod, byName map[string][]pod.RuntimeContainer, res *syncResult) *podplan.ResizePlan {
	plan := podplan.Resize(p, byName, s.cg.QOSClass, s.hooks.resize[0].Fits)
	switch {
	case plan == nil:
		s.notes.resize(p.Metadata.UID, nil)
	case plan.Reason != "":
		s.noteResizeRefused(p, plan.Reason, plan.Message)
		if plan.Retry {
			res.after(resizeRetry)
		}
	}
	return plan
}

// noteResizeRefused reports a resize that cannot be applied.
func (s *podSyncer) noteResizeRefused(p *pod.Pod, reason, msg string) {
	c := pod.Condition{Type: pod.ConditionPodResizePending, Status: "True", Reason: reason, Message: msg}
	if s.notes.resize(p.Metadata.UID, []pod.Condition{c}) {
		s.log.Warn("pod resize refused: "+reason, "pod", p.FullName(), "uid", p.Metadata.UID, "err", msg)
	}
}

// applyResize resizes the plan's containers in place, after the caller
// ensured the pod cgroup for plan.grow (a pod-level value that grows is
// raised before its containers'); it then lowers the pod cgroup's values
// that shrink (after its containers'). A resize the hook refuses (a memory
// limit lowered below the container's usage) stays in progress, with
// reason Error, and is retried. It returns the pod to sync: p, with a container whose resize
// failed at its allocated resources; recs, the pod's records, get the new
// spec hash and allocated resources of each resized container.
func (s *podSyncer) applyResize(ctx context.Context, p *pod.Pod, plan *podplan.ResizePlan, recs []pod.RuntimeContainer, res *syncResult) *pod.Pod {
	uid := p.Metadata.UID
	out := podplan.CopyPod(p)
	var failed []string
	for _, it := range plan.Items {
		c := podplan.ContainerAt(p, it)
		want := s.cg.Container(p, c)
		hash := pod.ContainerHash(p, c)
		if err := s.hooks.resize[0].Resize(ctx, it, c, want, hash); err != nil {
			failed = append(failed, fmt.Sprintf("container %s: %v", c.Name, err))
			*podplan.ContainerAt(out, it) = *podplan.ContainerAt(plan.Alloc, it)
			continue
		}
		if i := slices.IndexFunc(recs, func(r pod.RuntimeContainer) bool { return r.ID == it.Rec.ID }); i >= 0 {
			allocated := c.Resources
			recs[i].SpecHash, recs[i].Allocated = hash, &allocated
		}
		s.event(p, c.Name, eventNormal, reasonResized, "Resized container "+c.Name+" in place")
		s.log.Info("container resized in place", "pod", p.FullName(), "uid", uid, "container", c.Name)
	}
	if _, err := s.cg.EnsurePod(ctx, out); err != nil {
		failed = append(failed, fmt.Sprintf("pod cgroup: %v", err))
	}
	if len(failed) == 0 {
		s.notes.resize(uid, nil)
		return out
	}
	msg := strings.Join(failed, "; ")
	cond := pod.Condition{Type: pod.ConditionPodResizeInProgress, Status: "True", Reason: reasonResizeError, Message: msg}
	if s.notes.resize(uid, []pod.Condition{cond}) {
		s.log.Warn("pod resize failed; retried", "pod", p.FullName(), "uid", uid, "err", msg)
	}
	res.after(resizeRetry)
	return out
}
