package podplan

import (
	"fmt"
	"slices"

	"tug/internal/pod"
)

// ResizeInfeasible is the PodResizePending reason of a resize that cannot
// be applied while the node and the pod are as they are (one that would
// change the pod's QoS class, or asks more than the node has). Deferred,
// the other reason, waits for room and is tried again.
const ResizeInfeasible = "Infeasible"

// ResizeItem is one running container whose spec differs from what it
// runs with only in resources it can be resized to in place.
type ResizeItem struct {
	Index int  // in Containers, or InitContainers for a sidecar
	Init  bool // a sidecar
	Rec   pod.RuntimeContainer
}

// ResizePlan is what a sync does about a pod's in-place resizes.
type ResizePlan struct {
	// Items are the containers to resize, none when the resize is
	// refused.
	Items []ResizeItem
	// Alloc is the pod with every item at its allocated resources (the
	// pod to sync when the resize is refused), Grow the pod with every
	// item at the larger of both (the pod cgroup a resize is applied in).
	Alloc, Grow *pod.Pod
	// Reason and Message say why the resize is refused (the
	// PodResizePending condition's); Retry: it is tried again soon
	// (Deferred).
	Reason, Message string
	Retry           bool
}

// Resize finds the running containers of p whose change is a resize
// (KEP-1287): resources under the resize policy NotRequired, and nothing
// else; a container with another change, or a RestartContainer resource
// changed, is recreated by Compute's rules instead. It returns nil when
// there is none. A resize that would change the pod's QoS class (qos
// gives a pod's) is infeasible, and one that does not fit the node (fits,
// nil: every resize fits) is infeasible or deferred: then the plan has no
// items and Alloc is the pod to sync, its containers keeping what they
// run with. It is pure but for qos and fits.
func Resize(p *pod.Pod, byName map[string][]pod.RuntimeContainer, qos func(*pod.Pod) string, fits func(*pod.Pod) (reason, msg string)) *ResizePlan {
	var items []ResizeItem
	look := func(list []pod.Container, init bool) {
		for i := range list {
			c := &list[i]
			if init && !c.IsSidecar() {
				continue
			}
			last := Latest(byName[c.Name])
			if last == nil || last.SpecHash == pod.ContainerHash(p, c) {
				continue
			}
			if ResizeOnly(p, c, last) {
				items = append(items, ResizeItem{Index: i, Init: init, Rec: *last})
			}
		}
	}
	look(p.Spec.InitContainers, true)
	look(p.Spec.Containers, false)
	if len(items) == 0 {
		return nil
	}
	plan := &ResizePlan{Items: items, Alloc: CopyPod(p), Grow: CopyPod(p)}
	for _, it := range items {
		c := ContainerAt(p, it)
		*ContainerAt(plan.Alloc, it) = pod.WithResources(c, *it.Rec.Allocated)
		*ContainerAt(plan.Grow, it) = pod.WithResources(c, larger(c.Resources, *it.Rec.Allocated))
	}
	if qos(plan.Grow) != qos(p) {
		plan.Grow = p // no order to keep across a class's cgroups
	}
	if from, to := qos(plan.Alloc), qos(p); from != to {
		plan.Items, plan.Reason = nil, ResizeInfeasible
		plan.Message = fmt.Sprintf("Pod QOS Class may not change as a result of resizing (from %s to %s)", from, to)
		return plan
	}
	if fits != nil {
		if reason, msg := fits(p); reason != "" {
			plan.Items, plan.Reason, plan.Message, plan.Retry = nil, reason, msg, reason != ResizeInfeasible
		}
	}
	return plan
}

// ResizeOnly reports whether running container last differs from c, its
// spec in p, in resources it can be resized to in place and nothing else.
func ResizeOnly(p *pod.Pod, c *pod.Container, last *pod.RuntimeContainer) bool {
	return last.State == pod.RunRunning && resourcesOnly(p, c, last)
}

// resourcesOnly reports whether container last, in whatever state,
// differs from c, its spec in p, in its resources and nothing else.
func resourcesOnly(p *pod.Pod, c *pod.Container, last *pod.RuntimeContainer) bool {
	if last.Allocated == nil {
		return false
	}
	cc := pod.WithResources(c, *last.Allocated)
	return pod.ContainerHash(p, &cc) == last.SpecHash
}

// Allocated returns p with each container that differs from its spec
// only by a resize (pending, or being applied) at the resources it was
// created with: the pod whose QoS class the status reports, as the class
// of a running pod does not change with a resize. The container's state
// does not matter: a container just started may still be "created" in
// the records, and one that exited ran with those resources until it is
// created again. It returns p itself when there is none.
func Allocated(p *pod.Pod, recs []pod.RuntimeContainer) *pod.Pod {
	byName := GroupByName(recs)
	out := p
	for _, it := range []struct {
		list []pod.Container
		init bool
	}{{p.Spec.InitContainers, true}, {p.Spec.Containers, false}} {
		for i := range it.list {
			c := &it.list[i]
			last := Latest(byName[c.Name])
			if last == nil || last.SpecHash == pod.ContainerHash(p, c) || !resourcesOnly(p, c, last) {
				continue
			}
			if out == p {
				out = CopyPod(p)
			}
			*ContainerAt(out, ResizeItem{Index: i, Init: it.init}) = pod.WithResources(c, *last.Allocated)
		}
	}
	return out
}

// CopyPod copies p with container slices of its own.
func CopyPod(p *pod.Pod) *pod.Pod {
	cp := *p
	cp.Spec.Containers = slices.Clone(p.Spec.Containers)
	cp.Spec.InitContainers = slices.Clone(p.Spec.InitContainers)
	return &cp
}

// ContainerAt is the container of p an item names.
func ContainerAt(p *pod.Pod, it ResizeItem) *pod.Container {
	if it.Init {
		return &p.Spec.InitContainers[it.Index]
	}
	return &p.Spec.Containers[it.Index]
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
