package podruntime

import (
	"context"
	"fmt"
	"tug/internal/podlabels"

	containerd "github.com/containerd/containerd/v2/client"
)

// WaitContainer blocks until the container's task has exited and been
// reaped by its reaper (its exit recorded in the container's labels, the
// task deleted, which also makes the log file complete) and returns its
// exit code, at once if it already has. For a task that is already deleted
// the exit code recorded in the labels is returned; for one that vanished
// unseen (its shim died, the host rebooted), 255. A container that was
// never started is ErrNoTask; a missing one ErrContainerNotFound.
func (r *Runtime) WaitContainer(ctx context.Context, id string) (int, error) {
	rp := r.exitOf(id)
	select {
	case <-rp.done:
		if rp.err != nil {
			return 0, fmt.Errorf("wait for container %s: %w", id, rp.err)
		}
		return rp.code, nil
	case <-ctx.Done():
		return 0, fmt.Errorf("wait for container %s: %w", id, ctx.Err())
	}
}

// exitFromLabels returns the exit code of a container whose task is gone.
func (r *Runtime) exitFromLabels(ctx context.Context, cont containerd.Container) (int, error) {
	labels, err := cont.Labels(ctx)
	if err != nil {
		return 0, notFound(err)
	}
	if code, _, ok := podlabels.ReadExit(labels); ok {
		return code, nil
	}
	if _, started := labels[podlabels.LabelStartedAt]; started {
		return unknownExitCode, nil
	}
	return 0, ErrNoTask
}
