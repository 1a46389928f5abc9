package podruntime

import (
	"context"
	"fmt"
	"os"

	"tug/internal/pod"
	"tug/internal/podlogs"
	"tug/internal/volume"
)

// PreparePod creates what the pod's containers mount (volume.Manager's
// Prepare; owned by the pod's root for a pod in a user namespace of its
// own, whose block of host IDs it takes) and, for a pod that shares its
// process namespace, its PID namespace holder, and returns sb with the
// pod's user namespace mapping: the sandbox StartContainer takes. It is
// idempotent.
func (r *Runtime) PreparePod(ctx context.Context, p *pod.Pod, sb pod.Sandbox) (pod.Sandbox, error) {
	sb, err := r.withUserNS(p, sb)
	if err != nil {
		return sb, err
	}
	if err := r.volumes.Prepare(p, sb); err != nil {
		return sb, err
	}
	if err := r.ensureHolder(r.ctx(ctx), p, sb); err != nil {
		return sb, fmt.Errorf("prepare pod %s: %w", p.FullName(), err)
	}
	return sb, nil
}

// CleanupPod removes the pod's PID namespace holder, unmounts its tmpfs
// and image volumes, removes the views of its image volumes,
// RootDir/pods/<uid> and the pod's log directory, and frees its devices
// and its block of user namespace IDs, and forgets its
// tug.io/ImageFromCache condition. The
// pod's containers must already be removed. A pod with nothing left is not
// an error.
func (r *Runtime) CleanupPod(ctx context.Context, p *pod.Pod) error {
	if err := volume.CheckPod(p); err != nil {
		return err
	}
	uid := p.Metadata.UID
	if r.images != nil {
		r.images.ForgetPod(uid)
	}
	if err := r.removeHolder(r.ctx(ctx), uid); err != nil {
		return fmt.Errorf("clean up pod %s: remove PID namespace holder: %w", p.FullName(), err)
	}
	if err := r.volumes.Remove(uid); err != nil {
		return fmt.Errorf("clean up pod %s: %w", p.FullName(), err)
	}
	if err := r.volumes.RemoveImageViews(r.ctx(ctx), uid); err != nil {
		return fmt.Errorf("clean up pod %s: %w", p.FullName(), err)
	}
	if err := os.RemoveAll(r.podLogDir(p)); err != nil {
		return fmt.Errorf("clean up pod %s: remove logs: %w", p.FullName(), err)
	}
	if r.cfg.Devices != nil {
		if err := r.cfg.Devices.Release(uid); err != nil {
			return fmt.Errorf("clean up pod %s: %w", p.FullName(), err)
		}
	}
	if r.cfg.UserNamespaces != nil {
		if err := r.cfg.UserNamespaces.Release(uid); err != nil {
			return fmt.Errorf("clean up pod %s: %w", p.FullName(), err)
		}
	}
	return nil
}

// terminationMessage returns the termination message of exited container
// rc: what it wrote, or the tail of its log when it failed under
// FallbackToLogsOnError.
func (r *Runtime) terminationMessage(rc *pod.RuntimeContainer) string {
	msg, fallback := r.volumes.TerminationMessage(rc)
	if fallback != "" {
		return podlogs.Tail(fallback)
	}
	return msg
}
