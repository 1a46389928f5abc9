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
	reasonResizeInfeasible = "Infeasible"
	reasonResizeError      = "Error"
	reasonResized          = "Resized"
)

// resizeRetry is how often a resize that waits (Deferred, or a memory
// limit below the usage) is tried again.
const resizeRetry = 5 * time.Second

// resizeItem is one running container whose spec differs from what it
// runs with only in resources it can be resized to in place.
type resizeItem struct {
	index int  // in Containers, or InitContainers for a sidecar
	init  bool // a sidecar
	rec   pod.RuntimeContainer
}

// resizePlan is what a sync does about the pod's in-place resizes.
type resizePlan struct {
	items []resizeItem
	alloc *pod.Pod // the pod with every item at its allocated resources
	grow  *pod.Pod // the pod with every item at the larger of both
}

// planResize finds the running containers of p whose change is a resize
// (KEP-1287): resources under the resize policy NotRequired, and nothing
// else. A container with another change, or a RestartContainer resource
// changed, is recreated by the normal update rules instead. It returns nil
// when there is none. A resize that would change the pod's QoS class is
// infeasible, and one that does not fit the node is infeasible or
// deferred: then the plan has no items and alloc is the pod to sync, the
// containers keeping what they run with, and the PodResizePending
// condition says why.
func (s *podSyncer) planResize(p *pod.Pod, byName map[string][]pod.RuntimeContainer, res *syncResult) *resizePlan {
	uid := p.Metadata.UID
	var items []resizeItem
	look := func(list []pod.Container, init bool) {
		for i := range list {
			c := &list[i]
			if init && !c.IsSidecar() {
				continue
			}
			last := podplan.Latest(byName[c.Name])
			if last == nil || last.SpecHash == pod.ContainerHash(p, c) {
				continue
			}
			if resizeOnly(p, c, last) {
				items = append(items, resizeItem{index: i, init: init, rec: *last})
			}
		}
	}
	look(p.Spec.InitContainers, true)
	look(p.Spec.Containers, false)
	if len(items) == 0 {
		s.notes.resize(uid, nil)
		return nil
	}
	plan := &resizePlan{items: items, alloc: copyPod(p), grow: copyPod(p)}
	for _, it := range items {
		c := containerAt(p, it)
		*containerAt(plan.alloc, it) = pod.WithResources(c, *it.rec.Allocated)
		*containerAt(plan.grow, it) = pod.WithResources(c, larger(c.Resources, *it.rec.Allocated))
	}
	if s.cg.QOSClass(plan.grow) != s.cg.QOSClass(p) {
		plan.grow = p // no order to keep across a class's cgroups
	}
	if from, to := s.cg.QOSClass(plan.alloc), s.cg.QOSClass(p); from != to {
		s.noteResizeRefused(p, reasonResizeInfeasible, fmt.Sprintf("Pod QOS Class may not change as a result of resizing (from %s to %s)", from, to))
		plan.items = nil
		return plan
	}
	if s.resizeCg != nil {
		if reason, msg := s.resizeCg.ResizeFits(p); reason != "" {
			s.noteResizeRefused(p, reason, msg)
			if reason != reasonResizeInfeasible {
				res.after(resizeRetry)
			}
			plan.items = nil
			return plan
		}
	}
	return plan
}

// resizeOnly reports whether running container last differs from c, its
// spec in p, in resources it can be resized to in place and nothing else.
func resizeOnly(p *pod.Pod, c *pod.Container, last *pod.RuntimeContainer) bool {
	if last.State != pod.RunRunning || last.Allocated == nil {
		return false
	}
	cc := pod.WithResources(c, *last.Allocated)
	return pod.ContainerHash(p, &cc) == last.SpecHash
}

// allocatedPod returns p with each running container that differs from
// its spec only by a resize (pending, or being applied) at the resources
// it runs with: the pod whose QoS class the status reports, as the class
// of a running pod does not change with a resize. It returns p itself
// when there is none.
func allocatedPod(p *pod.Pod, recs []pod.RuntimeContainer) *pod.Pod {
	byName := podplan.GroupByName(recs)
	out := p
	for _, it := range []struct {
		list []pod.Container
		init bool
	}{{p.Spec.InitContainers, true}, {p.Spec.Containers, false}} {
		for i := range it.list {
			c := &it.list[i]
			last := podplan.Latest(byName[c.Name])
			if last == nil || last.SpecHash == pod.ContainerHash(p, c) || !resizeOnly(p, c, last) {
				continue
			}
			if out == p {
				out = copyPod(p)
			}
			*containerAt(out, resizeItem{index: i, init: it.init}) = pod.WithResources(c, *last.Allocated)
		}
	}
	return out
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
func (s *podSyncer) applyResize(ctx context.Context, p *pod.Pod, plan *resizePlan, recs []pod.RuntimeContainer, res *syncResult) *pod.Pod {
	uid := p.Metadata.UID
	out := copyPod(p)
	var failed []string
	for _, it := range plan.items {
		c := containerAt(p, it)
		want := s.cg.Container(p, c)
		err := s.checkMemoryDecrease(it, c)
		hash := pod.ContainerHash(p, c)
		if err == nil {
			err = s.resizer.ResizeContainer(ctx, it.rec.ID, want, c.Resources, hash)
		}
		if err != nil {
			failed = append(failed, fmt.Sprintf("container %s: %v", c.Name, err))
			*containerAt(out, it) = *containerAt(plan.alloc, it)
			continue
		}
		if i := slices.IndexFunc(recs, func(r pod.RuntimeContainer) bool { return r.ID == it.rec.ID }); i >= 0 {
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
func (s *podSyncer) checkMemoryDecrease(it resizeItem, c *pod.Container) error {
	q, ok := c.Resources.Limits[pod.ResourceMemory]
	if s.resizeCg == nil || !ok || q.Value() <= 0 {
		return nil
	}
	limit := q.Value()
	if old, ok := it.rec.Allocated.Limits[pod.ResourceMemory]; ok && old.Value() <= limit {
		return nil
	}
	usage, err := s.resizeCg.ContainerMemoryUsage(it.rec.CgroupParent, it.rec.ID)
	if err != nil {
		return err
	}
	if usage > limit {
		return fmt.Errorf("%w: memory limit %d is below the usage of %d bytes", pod.ErrResizeBelowUsage, limit, usage)
	}
	return nil
}

// copyPod copies p with container slices of its own.
func copyPod(p *pod.Pod) *pod.Pod {
	cp := *p
	cp.Spec.Containers = slices.Clone(p.Spec.Containers)
	cp.Spec.InitContainers = slices.Clone(p.Spec.InitContainers)
	return &cp
}

// containerAt is the container of p an item names.
func containerAt(p *pod.Pod, it resizeItem) *pod.Container {
	if it.init {
		return &p.Spec.InitContainers[it.index]
	}
	return &p.Spec.Containers[it.index]
}

// larger returns, per cpu and memory, the larger request of a and b and
// the larger limit (no limit being the largest).
func larger(a, b pod.Resources) pod.Resources {
	out := pod.Resources{Requests: pod.ResourceList{}, Limits: pod.ResourceList{}}
	for _, name := range []pod.ResourceName{pod.ResourceCPU, pod.ResourceMemory} {
		ra, oka := a.Requests[name]
		rb, okb := b.Requests[name]
		switch {
		case oka && (!okb || ra.MilliValue() >= rb.MilliValue()):
			out.Requests[name] = ra
		case okb:
			out.Requests[name] = rb
		}
		la, oka := a.Limits[name]
		lb, okb := b.Limits[name]
		switch {
		case !oka || !okb:
		case la.MilliValue() >= lb.MilliValue():
			out.Limits[name] = la
		default:
			out.Limits[name] = lb
		}
	}
	return out
}
