package podruntime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/errdefs"

	"tug/internal/images"
	"tug/internal/pod"
	"tug/internal/podlabels"
	"tug/internal/volume"
)

// The labels of an image volume's snapshot view. The view is a GC root
// (containerd keeps it, and the image's layers below it, until tug
// removes it with its pod); the others say whose it is and what it holds.
const (
	labelGCRoot          = "containerd.io/gc.root"
	labelImageVolumeUID  = podlabels.Prefix + "image-volume.pod-uid"
	labelImageVolumeRef  = podlabels.Prefix + "image-volume.image"
	labelImageVolumeID   = podlabels.Prefix + "image-volume.digest"
	imageVolumeKeyPrefix = "tug-image-volume/"
)

// imageViewKey is the snapshot key of the view of pod uid's image volume
// name.
func imageViewKey(uid, name string) string { return imageVolumeKeyPrefix + uid + "/" + name }

// mountImageVolumes makes each image volume c mounts present and mounted
// below the pod's directory, where volume.Manager's Mounts binds it from,
// and returns the image ID ("name@digest") of each, by volume name.
func (r *Runtime) mountImageVolumes(ctx context.Context, p *pod.Pod, c *pod.Container) (map[string]string, error) {
	out := map[string]string{}
	for _, vm := range c.VolumeMounts {
		if _, done := out[vm.Name]; done {
			continue
		}
		for i := range p.Spec.Volumes {
			v := &p.Spec.Volumes[i]
			if v.Name != vm.Name || v.Image == nil {
				continue
			}
			id, err := r.mountImageVolume(ctx, p, c, v)
			if err != nil {
				return nil, fmt.Errorf("image volume %q: %w", v.Name, err)
			}
			out[v.Name] = id
		}
	}
	return out, nil
}

// mountImageVolume mounts image volume v of p, resolving its image the
// first time one of p's containers mounts it: the view made then (its
// labels name the image and digest) serves every container of the pod, and
// a tug that restarts adopts it, mounting it again if the host lost the
// mount. The image is resolved again only when the pod's volume names
// another one.
func (r *Runtime) mountImageVolume(ctx context.Context, p *pod.Pod, c *pod.Container, v *pod.Volume) (string, error) {
	uid := p.Metadata.UID
	defer r.imageVolumes.lock(uid + "/" + v.Name)()
	ref, err := images.NormalizeRef(v.Image.Reference)
	if err != nil {
		return "", err
	}
	sn := r.client.SnapshotService(r.cfg.Snapshotter)
	key := imageViewKey(uid, v.Name)
	info, err := sn.Stat(ctx, key)
	switch {
	case err == nil && info.Labels[labelImageVolumeRef] == ref:
		mounted, err := r.volumes.ImageVolumeMounted(uid, v.Name)
		if err != nil || mounted {
			return imageID(info.Labels), err
		}
		mounts, err := sn.Mounts(ctx, key)
		if err != nil {
			return "", fmt.Errorf("mounts of view %s: %w", key, err)
		}
		return imageID(info.Labels), r.volumes.MountImageVolume(uid, v.Name, mounts)
	case err == nil: // the volume names another image
		if err := r.volumes.UnmountImageVolume(uid, v.Name); err != nil {
			return "", err
		}
		if err := sn.Remove(ctx, key); err != nil && !errdefs.IsNotFound(err) {
			return "", fmt.Errorf("remove view %s: %w", key, err)
		}
	case !errdefs.IsNotFound(err):
		return "", fmt.Errorf("view %s: %w", key, err)
	}
	content, err := r.images.EnsureVolume(ctx, p, c.Name, v.Image)
	if err != nil {
		return "", err
	}
	labels := map[string]string{
		labelGCRoot:         r.cfg.Clock.Now().UTC().Format(time.RFC3339),
		labelImageVolumeUID: uid,
		labelImageVolumeRef: content.Name,
		labelImageVolumeID:  content.Digest,
	}
	mounts, err := sn.View(ctx, key, content.ChainID, snapshots.WithLabels(labels))
	if err != nil {
		return "", fmt.Errorf("view %s of %s: %w", key, content.Name, err)
	}
	if err := r.volumes.MountImageVolume(uid, v.Name, mounts); err != nil {
		if rerr := sn.Remove(context.WithoutCancel(ctx), key); rerr != nil {
			r.log.Warn("remove image volume view", "pod", p.FullName(), "uid", uid, "image", content.Name, "err", rerr)
		}
		return "", err
	}
	r.log.Info("mounted image volume", "pod", p.FullName(), "uid", uid, "image", content.Name, "digest", content.Digest, "volume", v.Name)
	return imageID(labels), nil
}

// pullImageVolumes makes present the images of the image volumes c mounts
// whose view (if any) holds another image.
func (r *Runtime) pullImageVolumes(ctx context.Context, p *pod.Pod, c *pod.Container) error {
	sn := r.client.SnapshotService(r.cfg.Snapshotter)
	for _, vm := range c.VolumeMounts {
		for i := range p.Spec.Volumes {
			v := &p.Spec.Volumes[i]
			if v.Name != vm.Name || v.Image == nil {
				continue
			}
			ref, err := images.NormalizeRef(v.Image.Reference)
			if err != nil {
				return err
			}
			info, err := sn.Stat(ctx, imageViewKey(p.Metadata.UID, v.Name))
			if err == nil && info.Labels[labelImageVolumeRef] == ref {
				continue
			}
			if _, err := r.images.EnsureVolume(ctx, p, c.Name, v.Image); err != nil {
				return fmt.Errorf("image volume %q: %w", v.Name, err)
			}
		}
	}
	return nil
}

// imageID is the "name@digest" of a view's labels (the name itself when it
// pins the digest).
func imageID(labels map[string]string) string {
	ref := labels[labelImageVolumeRef]
	if strings.Contains(ref, "@") {
		return ref
	}
	return ref + "@" + labels[labelImageVolumeID]
}

// removeImageViews removes the image volume views of pod uid; their
// mounts must be gone (volume.Manager's Remove). A Runtime without a
// client (a test's) has none.
func (r *Runtime) removeImageViews(ctx context.Context, uid string) error {
	if r.client == nil {
		return nil
	}
	sn := r.client.SnapshotService(r.cfg.Snapshotter)
	var keys []string
	err := sn.Walk(ctx, func(_ context.Context, info snapshots.Info) error {
		keys = append(keys, info.Name)
		return nil
	}, fmt.Sprintf(`labels."%s"==%q`, labelImageVolumeUID, uid))
	if err != nil {
		return fmt.Errorf("list image volume views: %w", err)
	}
	var errs []error
	for _, k := range keys {
		if err := sn.Remove(ctx, k); err != nil && !errdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove image volume view %s: %w", k, err))
		}
	}
	return errors.Join(errs...)
}

// imageViewUIDs returns the pod UIDs of the image volume views, so that
// housekeeping finds the views of a pod that left nothing else behind. A
// Runtime without a client (a test's) has none.
func (r *Runtime) imageViewUIDs() ([]string, error) {
	if r.client == nil {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	var out []string
	err := r.client.SnapshotService(r.cfg.Snapshotter).Walk(r.ctx(ctx), func(_ context.Context, info snapshots.Info) error {
		if uid := info.Labels[labelImageVolumeUID]; volume.CheckName("pod uid", uid) == nil {
			out = append(out, uid)
		}
		return nil
	}, fmt.Sprintf(`labels."%s"`, labelImageVolumeUID))
	if err != nil {
		return nil, fmt.Errorf("list image volume views: %w", err)
	}
	return out, nil
}

// ImageVolumeImages returns the names of the images that image volume
// views hold (for the image GC, which keeps them).
func (r *Runtime) ImageVolumeImages(ctx context.Context) ([]string, error) {
	sn := r.client.SnapshotService(r.cfg.Snapshotter)
	var out []string
	err := sn.Walk(r.ctx(ctx), func(_ context.Context, info snapshots.Info) error {
		if ref := info.Labels[labelImageVolumeRef]; ref != "" {
			out = append(out, ref, info.Labels[labelImageVolumeID])
		}
		return nil
	}, fmt.Sprintf(`labels."%s"`, labelImageVolumeUID))
	if err != nil {
		return nil, fmt.Errorf("list image volume views: %w", err)
	}
	return out, nil
}
