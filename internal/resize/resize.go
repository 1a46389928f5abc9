// Package resize owns resizing a running container in place (KEP-1287) as
// one of the sync loop's hooks: whether a pod's resized requests fit the
// node, and the resize of one container, refused when its memory limit
// would fall below what it uses, else applied to its cgroup and recorded on
// it through the runtime. Which containers to resize, and in which order
// around the pod cgroup, is podplan.Resize's; the conditions and events
// are the sync loop's.
package resize

import (
	"context"
	"fmt"

	"tug/internal/pod"
	"tug/internal/podplan"
)

// Runtime applies a resize to a running container (podruntime.Runtime):
// its cgroup values, then its spec hash and allocated resources as labels.
type Runtime interface {
	ResizeContainer(ctx context.Context, id string, res pod.LinuxResources, allocated pod.Resources, hash string) error
}

// Cgroups answers what a resize needs from the QoS tree (qos.Manager).
type Cgroups interface {
	// ResizeFits returns "" when the pod's resized requests fit the node,
	// else Infeasible or Deferred and why.
	ResizeFits(p *pod.Pod) (reason, msg string)
	// ContainerMemoryUsage is the memory usage of container id below its
	// pod cgroup parent.
	ContainerMemoryUsage(parent, id string) (int64, error)
}

// Hook resizes running containers in place; it is the sync loop's
// ResizeHook. Without it a change of resources recreates the container.
type Hook struct {
	Runtime Runtime
	Cgroups Cgroups
}

// Name names the hook in logs.
func (Hook) Name() string { return "in-place resize" }

// Fits returns "" when the pod's resized requests fit the node, else
// Infeasible or Deferred and why.
func (h Hook) Fits(p *pod.Pod) (reason, msg string) { return h.Cgroups.ResizeFits(p) }

// Resize resizes running container it.Rec (spec c) to want, its spec hash
// becoming hash. A memory limit lowered below the container's usage is
// not applied (Kubernetes' best effort against an OOM kill):
// pod.ErrResizeBelowUsage.
func (h Hook) Resize(ctx context.Context, it podplan.ResizeItem, c *pod.Container, want pod.LinuxResources, hash string) error {
	if err := h.checkMemoryDecrease(it, c); err != nil {
		return err
	}
	return h.Runtime.ResizeContainer(ctx, it.Rec.ID, want, c.Resources, hash)
}

// checkMemoryDecrease refuses a memory limit of c lowered below the usage
// of its running container.
func (h Hook) checkMemoryDecrease(it podplan.ResizeItem, c *pod.Container) error {
	q, ok := c.Resources.Limits[pod.ResourceMemory]
	if !ok || q.Value() <= 0 {
		return nil
	}
	limit := q.Value()
	if a := it.Rec.Allocated; a != nil {
		if old, ok := a.Limits[pod.ResourceMemory]; ok && old.Value() <= limit {
			return nil
		}
	}
	usage, err := h.Cgroups.ContainerMemoryUsage(it.Rec.CgroupParent, it.Rec.ID)
	if err != nil {
		return err
	}
	if usage > limit {
		return fmt.Errorf("%w: memory limit %d is below the usage of %d bytes", pod.ErrResizeBelowUsage, limit, usage)
	}
	return nil
}
