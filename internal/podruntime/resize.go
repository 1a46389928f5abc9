package podruntime

import (
	"context"
	"fmt"

	containerd "github.com/containerd/containerd/v2/client"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"tug/internal/pod"
	"tug/internal/podlabels"
)

// ResizeContainer applies res, the cgroup values of a resized container,
// to its running task (containerd's task update: same container, same
// processes), then labels the container with its new spec hash and
// allocated resources, so the next sync finds it current. A value that
// goes back to unlimited is written as such. The caller orders the pod
// cgroup's update around it.
func (r *Runtime) ResizeContainer(ctx context.Context, id string, res pod.LinuxResources, allocated pod.Resources, hash string) error {
	ctx = r.ctx(ctx)
	cont, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return fmt.Errorf("resize container %s: %w", id, notFound(err))
	}
	task, err := cont.Task(ctx, nil)
	if err != nil {
		return fmt.Errorf("resize container %s: task: %w", id, notFound(err))
	}
	if err := task.Update(ctx, containerd.WithResources(updateResources(res))); err != nil {
		return fmt.Errorf("resize container %s: %w", id, err)
	}
	_, err = cont.SetLabels(ctx, map[string]string{podlabels.LabelSpecHash: hash, podlabels.LabelResources: podlabels.Resources(allocated)})
	r.records.changed()
	if err != nil {
		return fmt.Errorf("resize container %s: label: %w", id, err)
	}
	return nil
}

// updateResources is res as an update of a running container: every cpu
// and memory value set, -1 where res has no limit.
func updateResources(res pod.LinuxResources) *specs.LinuxResources {
	shares := res.CPUShares
	quota, period := int64(-1), uint64(100000)
	if res.CPUQuota > 0 {
		quota, period = res.CPUQuota, res.CPUPeriod
	}
	mem := int64(-1)
	if res.MemoryLimit > 0 {
		mem = res.MemoryLimit
	}
	out := &specs.LinuxResources{
		CPU:    &specs.LinuxCPU{Shares: &shares, Quota: &quota, Period: &period},
		Memory: &specs.LinuxMemory{Limit: &mem},
	}
	if len(res.Unified) > 0 {
		out.Unified = res.Unified
	}
	return out
}
