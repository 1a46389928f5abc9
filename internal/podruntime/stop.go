package podruntime

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/errdefs"
)

// StopContainer stops the container's task: its stop signal (see
// stopSignal; SIGTERM by default), up to grace for it to exit, then
// SIGKILL; it returns once the task's reaper has recorded the exit code
// and time in the container's labels and deleted the task (see reaper),
// at most killTimeout+cleanupTimeout after the SIGKILL. A missing
// container or one without a task is not an error.
func (r *Runtime) StopContainer(ctx context.Context, id string, grace time.Duration) error {
	ctx = r.ctx(ctx)
	if err := r.stopContainer(ctx, id, grace); err != nil {
		return fmt.Errorf("stop container %s: %w", id, err)
	}
	return nil
}

func (r *Runtime) stopContainer(ctx context.Context, id string, grace time.Duration) error {
	cont, err := r.client.LoadContainer(ctx, id)
	if errdefs.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	task, err := cont.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	st, err := task.Status(ctx)
	if errdefs.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	rp := r.exitOf(id) // waiting before the signal, so no exit is missed
	// A signal that fails (the task is being reaped at that moment, and
	// its shim closes) is reported only if the reaper does not end.
	var killErr error
	if st.Status != containerd.Stopped {
		done := false
		if grace > 0 {
			sig, err := containerd.GetStopSignal(ctx, cont, syscall.SIGTERM)
			if err != nil {
				r.log.Warn("stop signal unreadable, sending SIGTERM", "container", id, "err", err)
				sig = syscall.SIGTERM
			}
			if err := task.Kill(ctx, sig); err != nil && !errdefs.IsNotFound(err) {
				killErr = fmt.Errorf("send %v: %w", sig, err)
			}
			if done, err = reaped(ctx, rp, grace); err != nil {
				return err
			}
		}
		if !done {
			if err := task.Kill(ctx, syscall.SIGKILL, containerd.WithKillAll); err != nil && !errdefs.IsNotFound(err) {
				killErr = errors.Join(killErr, fmt.Errorf("send SIGKILL: %w", err))
			}
		}
	}
	// The reap after the exit is bounded by cleanupTimeout.
	if done, err := reaped(ctx, rp, killTimeout+cleanupTimeout); err != nil {
		return err
	} else if !done {
		return errors.Join(killErr, fmt.Errorf("task not reaped %s after SIGKILL", killTimeout+cleanupTimeout))
	}
	if rp.err != nil && !errors.Is(rp.err, ErrContainerNotFound) && !errors.Is(rp.err, ErrNoTask) {
		return rp.err
	}
	r.log.Info("stopped container", "container", id, "exit", rp.code)
	return nil
}
