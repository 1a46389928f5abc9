package podruntime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"syscall"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/errdefs"
)

// cleanup removes what a failed start created: the task, the container and
// its snapshot (or the bare snapshot when cont is nil). It runs on a context
// of its own so that a cancelled start leaks nothing.
func (r *Runtime) cleanup(ctx context.Context, id string, cont containerd.Container, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	var err error
	if cont != nil {
		err = r.deleteContainer(ctx, cont)
	} else {
		err = r.client.SnapshotService(r.cfg.Snapshotter).Remove(ctx, id)
	}
	if err != nil && !errdefs.IsNotFound(err) {
		log.Warn("clean up after failed start", "err", err)
	}
}

// deleteContainer kills and deletes the container's task, if any, then the
// container and its snapshot.
func (r *Runtime) deleteContainer(ctx context.Context, cont containerd.Container) error {
	task, err := cont.Task(ctx, nil)
	switch {
	case err == nil:
		// Its reaper deletes it, once the SIGKILL has ended it.
		// A kill that fails (the task is being reaped at that moment, and
		// its shim closes) matters only if the task stays.
		rp := r.exitOf(cont.ID())
		killErr := task.Kill(ctx, syscall.SIGKILL, containerd.WithKillAll)
		if errdefs.IsNotFound(killErr) {
			killErr = nil
		}
		if done, err := reaped(ctx, rp, killTimeout+cleanupTimeout); err != nil {
			return fmt.Errorf("delete task: %w", err)
		} else if !done {
			return fmt.Errorf("delete task: not reaped %s after SIGKILL: %w", killTimeout+cleanupTimeout, errors.Join(killErr))
		}
		if _, terr := cont.Task(ctx, nil); !errdefs.IsNotFound(terr) {
			return fmt.Errorf("delete task: %w", errors.Join(killErr, rp.err, terr))
		}
	case !errdefs.IsNotFound(err):
		return fmt.Errorf("load task: %w", err)
	}
	err = cont.Delete(ctx, containerd.WithSnapshotCleanup)
	if errdefs.IsNotFound(err) {
		// The snapshot is gone (an image repair removed it): the
		// snapshot clean-up fails before the record is deleted.
		err = cont.Delete(ctx)
	}
	r.records.changed()
	if err != nil && !errdefs.IsNotFound(err) {
		return err
	}
	return nil
}

// RemoveContainer deletes the container and its snapshot (killing a task
// that is still there). A missing container is not an error.
func (r *Runtime) RemoveContainer(ctx context.Context, id string) error {
	ctx = r.ctx(ctx)
	cont, err := r.client.LoadContainer(ctx, id)
	if errdefs.IsNotFound(err) {
		return nil
	} else if err != nil {
		return fmt.Errorf("remove container %s: %w", id, err)
	}
	if err := r.deleteContainer(ctx, cont); err != nil {
		return fmt.Errorf("remove container %s: %w", id, err)
	}
	r.log.Debug("removed container", "container", id)
	return nil
}

// notFound turns containerd's not-found into ErrContainerNotFound.
func notFound(err error) error {
	if errdefs.IsNotFound(err) {
		return fmt.Errorf("%w: %w", ErrContainerNotFound, err)
	}
	return err
}
