package podruntime

import (
	"context"
	"errors"
	"fmt"
	"strings"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/errdefs"

	"tug/internal/pod"
	"tug/internal/volume"
)

// Damaged images (images/damage.go). A container whose image a power cut
// damaged fails in one of two ways: its task cannot be created or started
// (the entrypoint is missing), or it starts and exits at once (an empty
// entrypoint: runc's exec fails with "exec format error" after the start
// succeeded). The runtime does not read runc's error text to tell these
// from other failures: after a failed create or start, and before the task
// of a restart, it asks images to look at the entrypoint in the image's
// snapshot, and a damaged one is an error wrapping pod.ErrImageDamaged,
// which reconcile answers with RepairImage.

// imageDamage returns the damage of cont's entrypoint in img (wrapping
// pod.ErrImageDamaged), or nil when it is intact or cannot be looked at
// (logged at Debug: the start goes on and fails or not on its own).
func (r *Runtime) imageDamage(ctx context.Context, cont containerd.Container, img containerd.Image) error {
	spec, err := cont.Spec(ctx)
	if err != nil || spec.Process == nil || len(spec.Process.Args) == 0 {
		return nil
	}
	err = r.images.CheckEntrypoint(ctx, img, spec.Process.Args[0], spec.Process.Env, spec.Process.Cwd)
	if errors.Is(err, pod.ErrImageDamaged) {
		return err
	}
	if err != nil {
		r.log.Debug("cannot check the image's entrypoint", "container", cont.ID(), "image", img.Name(), "err", err)
	}
	return nil
}

// withImageDamage returns err, a failed create or start of cont's task,
// joined with the damage of its image's entrypoint if there is any.
func (r *Runtime) withImageDamage(ctx context.Context, cont containerd.Container, img containerd.Image, err error) error {
	if derr := r.imageDamage(ctx, cont, img); derr != nil {
		return fmt.Errorf("%w: %w", derr, err)
	}
	return err
}

// RepairImage removes c's image, found damaged, and pulls or imports it
// again (images.Manager.Repair; the sync loop's imagehooks.Repair calls it).
// The snapshots of containers that have no live task (exited attempts,
// leftovers) go with the image's chain; a running container's snapshot
// that descends from it makes the repair fail (images.ErrImageInUse).
func (r *Runtime) RepairImage(ctx context.Context, p *pod.Pod, c *pod.Container, damage error) error {
	ctx = r.ctx(ctx)
	busy, err := r.liveSnapshots(ctx)
	if err != nil {
		return fmt.Errorf("repair image %q: %w", c.Image, err)
	}
	// An image volume's view may be mounted into a running container: it
	// is never removed here.
	return r.images.Repair(ctx, p, c, damage, func(key string) bool {
		return !busy[key] && !strings.HasPrefix(key, volume.ImageViewKeyPrefix)
	})
}

// liveSnapshots returns the snapshot keys of the namespace's containers
// that have a task that is not stopped.
func (r *Runtime) liveSnapshots(ctx context.Context) (map[string]bool, error) {
	conts, err := r.client.Containers(ctx)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	busy := map[string]bool{}
	for _, cont := range conts {
		info, err := cont.Info(ctx, containerd.WithoutRefreshedMetadata)
		if err != nil || info.SnapshotKey == "" {
			continue
		}
		task, err := cont.Task(ctx, nil)
		if errdefs.IsNotFound(err) {
			continue
		}
		if err != nil {
			busy[info.SnapshotKey] = true // unknown: not removed
			continue
		}
		st, err := task.Status(ctx)
		if err != nil || st.Status != containerd.Stopped {
			busy[info.SnapshotKey] = true
		}
	}
	return busy, nil
}
