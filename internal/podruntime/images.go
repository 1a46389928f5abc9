package podruntime

import (
	"context"

	"tug/internal/images"
	"tug/internal/pod"
)

// StoredImage is one image of tug's containerd namespace as the image GC
// sees it (images.StoredImage).
type StoredImage = images.StoredImage

// NormalizeRef returns ref fully qualified as docker and Kubernetes read it
// (images.NormalizeRef).
func NormalizeRef(ref string) (string, error) { return images.NormalizeRef(ref) }

// PullImage makes c's image present as its imagePullPolicy says (it
// implements reconcile.ImagePuller): a changed container's image is pulled
// before its running predecessor is stopped. So are the images of the image
// volumes c mounts that the pod has not mounted yet (the volume names
// another image than its view).
func (r *Runtime) PullImage(ctx context.Context, p *pod.Pod, c *pod.Container) error {
	if _, err := r.images.Ensure(ctx, p, c); err != nil { // its errors name the image
		return err
	}
	return r.pullImageVolumes(r.ctx(ctx), p, c)
}

// PullMessage is the waiting message of a container whose image is being
// pulled, with the pull's progress (images.Manager.PullMessage); ok is
// false when no pull of image is under way.
func (r *Runtime) PullMessage(image string) (msg string, ok bool) {
	return r.images.PullMessage(image)
}

// ImageFromCacheCondition is the tug.io/ImageFromCache condition of a pod
// that runs a cached image because its Always pull reached no registry
// (images.Manager.ImageFromCacheCondition); nil when it has none.
func (r *Runtime) ImageFromCacheCondition(p *pod.Pod) *pod.Condition {
	return r.images.ImageFromCacheCondition(p)
}

// ImportArchives imports the image archives of ImageDir not imported yet.
func (r *Runtime) ImportArchives(ctx context.Context) error { return r.images.ImportArchives(ctx) }

// WatchImages imports the archives that appear in ImageDir until ctx ends.
func (r *Runtime) WatchImages(ctx context.Context) error { return r.images.Watch(ctx) }

// StoredImages lists the namespace's images grouped by target digest.
func (r *Runtime) StoredImages(ctx context.Context) ([]StoredImage, error) {
	return r.images.Stored(ctx)
}

// RemoveImage removes one image name.
func (r *Runtime) RemoveImage(ctx context.Context, name string) error {
	return r.images.Remove(ctx, name)
}

// ImageFSPath returns the directory of containerd's snapshotter.
func (r *Runtime) ImageFSPath(ctx context.Context) (string, error) { return r.images.FSPath(ctx) }
