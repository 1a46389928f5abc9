package podruntime

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"tug/internal/pod"
	"tug/internal/volume"
)

// A podPart is one thing the runtime keeps for a pod besides its
// containers. PreparePod prepares the parts in their order before the
// pod's containers start (each may add to the sandbox the containers start
// in); CleanupPod and RemovePodDirs clean them up in the reverse order once
// the containers are gone, by the pod's UID alone, since housekeeping
// cleans up pods whose manifest is gone. Both are idempotent.
type podPart struct {
	name    string
	prepare func(ctx context.Context, p *pod.Pod, sb pod.Sandbox) (pod.Sandbox, error) // nil: nothing to prepare
	cleanup func(ctx context.Context, uid string) error
}

// podParts lists the pod's parts in the order they are prepared: its user
// namespace first (the volumes are owned by the pod's root), its devices
// (allocated at admission, released here) and image volume views (made
// per container start) before the volumes they sit in, its PID namespace
// holder, its log directory and what its image pulls noted.
func (r *Runtime) podParts() []podPart {
	return []podPart{
		{name: "user namespace", prepare: r.prepareUserNS, cleanup: r.releaseUserNS},
		{name: "devices", cleanup: r.releaseDevices},
		{name: "image volume views", cleanup: func(ctx context.Context, uid string) error { return r.volumes.RemoveImageViews(ctx, uid) }},
		{name: "volumes", prepare: r.prepareVolumes, cleanup: func(_ context.Context, uid string) error { return r.volumes.Remove(uid) }},
		{name: "PID namespace holder", prepare: r.prepareHolder, cleanup: r.removeHolder},
		{name: "log directories", cleanup: r.removeLogDirs},
		{name: "image pull notes", cleanup: r.forgetPulls},
	}
}

// PreparePod prepares the pod's parts (podParts): its user namespace (for a
// pod with hostUsers: false, whose block of host IDs it takes), what its
// containers mount (volume.Manager's Prepare) and, for a pod that shares
// its process namespace, its PID namespace holder; and returns sb with the
// pod's user namespace mapping: the sandbox StartContainer takes. It is
// idempotent.
func (r *Runtime) PreparePod(ctx context.Context, p *pod.Pod, sb pod.Sandbox) (pod.Sandbox, error) {
	ctx = r.ctx(ctx)
	for _, part := range r.podParts() {
		if part.prepare == nil {
			continue
		}
		var err error
		if sb, err = part.prepare(ctx, p, sb); err != nil {
			return sb, err
		}
	}
	return sb, nil
}

// CleanupPod cleans up the pod's parts (podParts) in reverse order: its log
// directories, PID namespace holder, volumes (tmpfs and image volumes
// unmounted, RootDir/pods/<uid> removed), image volume views, devices and
// block of user namespace IDs, and what its pulls noted (its
// tug.io/ImageFromCache condition). The pod's containers must already be
// removed. A pod with nothing left is not an error.
func (r *Runtime) CleanupPod(ctx context.Context, p *pod.Pod) error {
	if err := volume.CheckPod(p); err != nil {
		return err
	}
	if err := r.cleanupParts(r.ctx(ctx), p.Metadata.UID); err != nil {
		return fmt.Errorf("clean up pod %s: %w", p.FullName(), err)
	}
	return nil
}

// RemovePodDirs cleans up the parts of pod uid as CleanupPod does, for a
// pod that is gone and whose name housekeeping no longer has. Nothing to
// remove is not an error.
func (r *Runtime) RemovePodDirs(uid string) error {
	if err := volume.CheckName("pod uid", uid); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if err := r.cleanupParts(r.ctx(ctx), uid); err != nil {
		return fmt.Errorf("clean up pod %s: %w", uid, err)
	}
	return nil
}

// cleanupParts cleans up the parts of pod uid in reverse order, and stops
// at the first that fails (the image volume views, say, stay while the
// volumes that mount them do).
func (r *Runtime) cleanupParts(ctx context.Context, uid string) error {
	parts := r.podParts()
	for i := len(parts) - 1; i >= 0; i-- {
		if err := parts[i].cleanup(ctx, uid); err != nil {
			return fmt.Errorf("%s: %w", parts[i].name, err)
		}
	}
	return nil
}

func (r *Runtime) prepareUserNS(_ context.Context, p *pod.Pod, sb pod.Sandbox) (pod.Sandbox, error) {
	return r.withUserNS(p, sb)
}

func (r *Runtime) releaseUserNS(_ context.Context, uid string) error {
	if r.cfg.UserNamespaces == nil {
		return nil
	}
	return r.cfg.UserNamespaces.Release(uid)
}

func (r *Runtime) releaseDevices(_ context.Context, uid string) error {
	if r.cfg.Devices == nil {
		return nil
	}
	return r.cfg.Devices.Release(uid)
}

func (r *Runtime) prepareVolumes(_ context.Context, p *pod.Pod, sb pod.Sandbox) (pod.Sandbox, error) {
	return sb, r.volumes.Prepare(p, sb)
}

func (r *Runtime) prepareHolder(ctx context.Context, p *pod.Pod, sb pod.Sandbox) (pod.Sandbox, error) {
	if err := r.ensureHolder(ctx, p, sb); err != nil {
		return sb, fmt.Errorf("prepare pod %s: %w", p.FullName(), err)
	}
	return sb, nil
}

// removeLogDirs removes every log directory of pod uid
// (<namespace>_<name>_<uid> below LogsDir).
func (r *Runtime) removeLogDirs(_ context.Context, uid string) error {
	entries, err := os.ReadDir(r.cfg.LogsDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, e := range entries {
		if u, ok := logDirUID(e.Name()); ok && u == uid && e.IsDir() {
			if err := os.RemoveAll(filepath.Join(r.cfg.LogsDir, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

func (r *Runtime) forgetPulls(_ context.Context, uid string) error {
	if r.images != nil {
		r.images.ForgetPod(uid)
	}
	return nil
}
