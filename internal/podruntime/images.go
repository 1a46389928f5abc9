package podruntime

import (
	"context"

	"tug/internal/pod"
)

// PullImage makes c's image present as its imagePullPolicy says (the sync
// loop's imagehooks.PrePull calls it): a changed container's image is
// pulled before its running predecessor is stopped, and the start that
// follows does not pull it again. So are the images of the image volumes c
// mounts that the pod has not mounted yet (the volume names another image
// than its view).
func (r *Runtime) PullImage(ctx context.Context, p *pod.Pod, c *pod.Container) error {
	if _, err := r.images.EnsureAhead(ctx, p, c); err != nil { // its errors name the image
		return err
	}
	return r.volumes.PullImageVolumes(r.ctx(ctx), p, c)
}
