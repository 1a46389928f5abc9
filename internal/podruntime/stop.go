package podruntime

import (
	"context"
	"fmt"
	"syscall"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/errdefs"
)

// StopContainer stops the container's task: its stop signal (see
// stopSignal; SIGTERM by default), up to grace for it to exit, then SIGKILL and a bounded wait (10 s); then it records the exit code
// and time in the container's labels and deletes the task (see reap). A
// missing container or one without a task is not an error.
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
	if st.Status != containerd.Stopped {
		exited, err := task.Wait(ctx)
		if err != nil {
			return err
		}
		done := false
		if grace > 0 {
			sig, err := containerd.GetStopSignal(ctx, cont, syscall.SIGTERM)
			if err != nil {
				r.log.Warn("stop signal unreadable, sending SIGTERM", "container", id, "err", err)
				sig = syscall.SIGTERM
			}
			if err := task.Kill(ctx, sig); err != nil && !errdefs.IsNotFound(err) {
				return fmt.Errorf("send %v: %w", sig, err)
			}
			if done, err = waitExit(ctx, exited, grace); err != nil {
				return err
			}
		}
		if !done {
			if err := task.Kill(ctx, syscall.SIGKILL, containerd.WithKillAll); err != nil && !errdefs.IsNotFound(err) {
				return fmt.Errorf("send SIGKILL: %w", err)
			}
			if done, err = waitExit(ctx, exited, killTimeout); err != nil {
				return err
			}
			if !done {
				return fmt.Errorf("task did not exit %s after SIGKILL", killTimeout)
			}
		}
		if st, err = task.Status(ctx); err != nil {
			return err
		}
	}
	if err := r.reap(ctx, id, st.ExitStatus, st.ExitTime); err != nil {
		return err
	}
	r.log.Info("stopped container", "container", id, "exit", st.ExitStatus)
	return nil
}

// waitExit waits up to d for the task's exit; it reports whether it came.
func waitExit(ctx context.Context, exited <-chan containerd.ExitStatus, d time.Duration) (bool, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-exited:
		return true, nil
	case <-t.C:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}
