package podruntime

import (
	"context"
	"errors"
	"fmt"
	"time"
	"tug/internal/podlabels"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/errdefs"
)

// WaitContainer blocks until the container's task has exited and returns
// its exit code, at once if it already has. The exit is then recorded in the
// container's labels and the task deleted (see reap), which also makes the
// log file complete. For a task that is already deleted the exit code
// recorded in the labels is returned; for one that vanished unseen (its shim
// died, the host rebooted), 255. A container that was never started is
// ErrNoTask; a missing one ErrContainerNotFound.
func (r *Runtime) WaitContainer(ctx context.Context, id string) (int, error) {
	code, err := r.waitContainer(r.ctx(ctx), id)
	if cerr := contextErr(ctx); err != nil && cerr != nil && !errors.Is(err, cerr) {
		// containerd reports a deadline that passed during a call as
		// "Unknown"; the caller's context says what really happened.
		return 0, fmt.Errorf("wait for container %s: %w", id, cerr)
	}
	return code, err
}

// contextErr is ctx.Err(), or DeadlineExceeded once ctx's deadline has
// passed even if its timer has not fired yet: on a loaded machine
// containerd's end of a call can see the deadline pass first.
func contextErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return nil
}

func (r *Runtime) waitContainer(ctx context.Context, id string) (int, error) {
	cont, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return 0, fmt.Errorf("wait for container %s: %w", id, notFound(err))
	}
	task, err := cont.Task(ctx, nil)
	if err != nil {
		if errdefs.IsNotFound(err) {
			return r.exitFromLabels(ctx, cont)
		}
		return 0, fmt.Errorf("wait for container %s: %w", id, err)
	}
	ch, err := task.Wait(ctx)
	if err != nil {
		return 0, fmt.Errorf("wait for container %s: %w", id, err)
	}
	select {
	case st := <-ch:
		code, at, err := st.Result()
		if err != nil {
			if errdefs.IsNotFound(err) { // deleted meanwhile
				return r.exitFromLabels(ctx, cont)
			}
			if ctx.Err() != nil {
				return 0, fmt.Errorf("wait for container %s: %w", id, ctx.Err())
			}
			return 0, fmt.Errorf("wait for container %s: %w", id, err)
		}
		if err := r.reap(ctx, id, code, at); err != nil {
			r.log.Warn("reap exited task", "container", id, "err", err)
		}
		return int(code), nil
	case <-ctx.Done():
		return 0, fmt.Errorf("wait for container %s: %w", id, ctx.Err())
	}
}

// exitFromLabels returns the exit code of a container whose task is gone.
func (r *Runtime) exitFromLabels(ctx context.Context, cont containerd.Container) (int, error) {
	labels, err := cont.Labels(ctx)
	if err != nil {
		return 0, fmt.Errorf("wait for container %s: %w", cont.ID(), notFound(err))
	}
	if code, _, ok := podlabels.ReadExit(labels); ok {
		return code, nil
	}
	if _, started := labels[podlabels.LabelStartedAt]; started {
		return unknownExitCode, nil
	}
	return 0, fmt.Errorf("wait for container %s: %w", cont.ID(), ErrNoTask)
}
