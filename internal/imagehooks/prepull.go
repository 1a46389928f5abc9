package imagehooks

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"tug/internal/pod"
)

// PrePull makes a container's image (and its image volumes' images)
// present before a running container of another image (or image volume)
// is stopped to make way for it: an update to an image that cannot be
// pulled leaves the old container serving, and the rollout controller
// rolls it back. It is the sync loop's PrestartHook.
type PrePull struct {
	// Pull makes c's images present as its imagePullPolicy says, without
	// creating anything, and returns the errors a start would
	// (pod.ErrImagePull, ...): podruntime.Runtime.PullImage.
	Pull func(ctx context.Context, p *pod.Pod, c *pod.Container) error
}

// Name names the hook in logs.
func (PrePull) Name() string { return "image pre-pull" }

// Prestart pulls c's images when one of the records c replaces runs
// another image or image volume.
func (h PrePull) Prestart(ctx context.Context, p *pod.Pod, c *pod.Container, replaced []pod.RuntimeContainer) error {
	if !slices.ContainsFunc(replaced, func(r pod.RuntimeContainer) bool {
		return r.State == pod.RunRunning && (r.Image != c.Image || imageVolumesChanged(p, c, &r))
	}) {
		return nil
	}
	if err := h.Pull(ctx, p, c); err != nil {
		return fmt.Errorf("image for container %q: %w", c.Name, err)
	}
	return nil
}

// imageVolumesChanged reports whether c mounts an image volume that running
// container r did not mount from the image the volume names. The reference
// is compared as written with r's normalised image ID ("busybox:1.36" with
// "docker.io/library/busybox:1.36@sha256:..."); a form it cannot match
// (no tag) counts as changed, which costs a pull check before the
// replacement, never a missed one.
func imageVolumesChanged(p *pod.Pod, c *pod.Container, r *pod.RuntimeContainer) bool {
	for _, vm := range c.VolumeMounts {
		for _, v := range p.Spec.Volumes {
			if v.Name != vm.Name || v.Image == nil {
				continue
			}
			id, ok := r.ImageVolume(v.Name)
			ref := v.Image.Reference
			same := id == ref || strings.HasSuffix(id, "/"+ref) || // pinned by digest
				strings.HasPrefix(id, ref+"@") || strings.Contains(id, "/"+ref+"@")
			if !ok || !same {
				return true
			}
		}
	}
	return false
}
