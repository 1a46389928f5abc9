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

// Resizer applies an in-place resize to a running container (implemented
// by podruntime.Runtime): its cgroup values, then its spec hash and
// allocated resources as labels.
type Resizer interface {
	ResizeContainer(ctx context.Context, id string, res pod.LinuxResources, allocated pod.Resources, hash string) error
}

// ResizeCgroups answers what a resize needs from the QoS tree (implemented
// by qos.Manager).
type ResizeCgroups interface {
	// ResizeFits returns "" when the pod's resized requests fit the node,
	// else Infeasible or Deferred and why.
	ResizeFits(p *pod.Pod) (reason, msg string)
	// ContainerMemoryUsage is the memory usage of container id below its
	// pod cgroup parent.
	ContainerMemoryUsage(parent, id string) (int64, error)
}

// The reasons of the resize conditions tug reports besides the
// ResizeCgroups ones.
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
	var fits func(*pod.Pod) (string, string)
	if s.resizeCg != nil {
		fits = s.resizeCg.ResizeFits
	}
	plan := podplan.Resize(p, byName, s.cg.QOSClass, fits)
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
// that shrink (after its containers'). A memory limit lowered below the
// container's usage is not applied (Kubernetes' best effort against an
// OOM kill): the resize stays in progress, with reason Error, and is
// retried. It returns the pod to sync: p, with a container whose resize
// failed at its allocated resources; recs, the pod's records, get the new
// spec hash and allocated resources of each resized container.
func (s *podSyncer) applyResize(ctx context.Context, p *pod.Pod, plan *podplan.ResizePlan, recs []pod.RuntimeContainer, res *syncResult) *pod.Pod {
	uid := p.Metadata.UID
	out := podplan.CopyPod(p)
	var failed []string
	for _, it := range plan.Items {
		c := podplan.ContainerAt(p, it)
		want := s.cg.Container(p, c)
		err := s.checkMemoryDecrease(it, c)
		hash := pod.ContainerHash(p, c)
		if err == nil {
			err = s.resizer.ResizeContainer(ctx, it.Rec.ID, want, c.Resources, hash)
		}
		if err != nil {
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

// checkMemoryDecrease refuses a memory limit of c lowered below the
// usage of its running container.
func (s *podSyncer) checkMemoryDecrease(it podplan.ResizeItem, c *pod.Container) error {
	q, ok := c.Resources.Limits[pod.ResourceMemory]
	if s.resizeCg == nil || !ok || q.Value() <= 0 {
		return nil
	}
	limit := q.Value()
	if old, ok := it.Rec.Allocated.Limits[pod.ResourceMemory]; ok && old.Value() <= limit {
		return nil
	}
	usage, err := s.resizeCg.ContainerMemoryUsage(it.Rec.CgroupParent, it.Rec.ID)
	if err != nil {
		return err
	}
	if usage > limit {
		return fmt.Errorf("%w: memory limit %d is below the usage of %d bytes", pod.ErrResizeBelowUsage, limit, usage)
	}
	return nil
}
