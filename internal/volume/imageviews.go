package volume

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/errdefs"

	"tug/internal/images"
	"tug/internal/pod"
	"tug/internal/podlabels"
)

// ImageSource makes the content of an image volume's image present and
// unpacked (implemented by images.Manager: the pull honours the volume's
// pullPolicy, as a container's image does).
type ImageSource interface {
	EnsureVolume(ctx context.Context, p *pod.Pod, container string, src *pod.ImageVolumeSource) (images.VolumeContent, error)
	// EnsureVolumeAhead is EnsureVolume before a running container is
	// replaced: the start that follows does not pull the image again.
	EnsureVolumeAhead(ctx context.Context, p *pod.Pod, container string, src *pod.ImageVolumeSource) (images.VolumeContent, error)
}

// ErrNoImageVolumes means a pod mounts an image volume and the Manager
// was given no snapshotter or image source to make it with.
var ErrNoImageVolumes = errors.New("volume: image volumes need a snapshotter and an image source")

// ctx returns ctx in tug's containerd namespace.
func (mgr *Manager) ctx(ctx context.Context) context.Context {
	return namespaces.WithNamespace(ctx, mgr.cfg.Namespace)
}

// The labels of an image volume's snapshot view. The view is a GC root
// (containerd keeps it, and the image's layers below it, until tug
// removes it with its pod); the others say whose it is and what it holds.
const (
	labelGCRoot         = "containerd.io/gc.root"
	labelImageVolumeUID = podlabels.Prefix + "image-volume.pod-uid"
	labelImageVolumeRef = podlabels.Prefix + "image-volume.image"
	labelImageVolumeID  = podlabels.Prefix + "image-volume.digest"
	// ImageViewKeyPrefix begins the snapshot key of every image volume
	// view: an image repair leaves such snapshots alone.
	ImageViewKeyPrefix = "tug-image-volume/"
)

// imageViewKey is the snapshot key of the view of pod uid's image volume
// name.
func imageViewKey(uid, name string) string { return ImageViewKeyPrefix + uid + "/" + name }

// MountImageVolumes makes each image volume c mounts present and mounted
// below the pod's directory, where Mounts binds it from, and returns the
// image ID ("name@digest") of each, by volume name.
func (mgr *Manager) MountImageVolumes(ctx context.Context, p *pod.Pod, c *pod.Container) (map[string]string, error) {
	ctx = mgr.ctx(ctx)
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
			id, err := mgr.mountImageView(ctx, p, c, v)
			if err != nil {
				return nil, fmt.Errorf("image volume %q: %w", v.Name, err)
			}
			out[v.Name] = id
		}
	}
	return out, nil
}

// mountImageView mounts image volume v of p, resolving its image the
// first time one of p's containers mounts it: the view made then (its
// labels name the image and digest) serves every container of the pod, and
// a tug that restarts adopts it, mounting it again if the host lost the
// mount. The image is resolved again only when the pod's volume names
// another one.
func (mgr *Manager) mountImageView(ctx context.Context, p *pod.Pod, c *pod.Container, v *pod.Volume) (string, error) {
	uid := p.Metadata.UID
	if mgr.cfg.Snapshots == nil || mgr.cfg.Images == nil {
		return "", ErrNoImageVolumes
	}
	defer mgr.viewLocks.Lock(uid + "/" + v.Name)()
	ref, err := images.NormalizeRef(v.Image.Reference)
	if err != nil {
		return "", err
	}
	sn := mgr.cfg.Snapshots
	key := imageViewKey(uid, v.Name)
	info, err := sn.Stat(ctx, key)
	switch {
	case err == nil && info.Labels[labelImageVolumeRef] == ref:
		mounted, err := mgr.imageVolumeMounted(uid, v.Name)
		if err != nil || mounted {
			return imageID(info.Labels), err
		}
		mounts, err := sn.Mounts(ctx, key)
		if err != nil {
			return "", fmt.Errorf("mounts of view %s: %w", key, err)
		}
		return imageID(info.Labels), mgr.mountImageVolume(uid, v.Name, mounts)
	case err == nil: // the volume names another image
		if err := mgr.unmountImageVolume(uid, v.Name); err != nil {
			return "", err
		}
		if err := sn.Remove(ctx, key); err != nil && !errdefs.IsNotFound(err) {
			return "", fmt.Errorf("remove view %s: %w", key, err)
		}
	case !errdefs.IsNotFound(err):
		return "", fmt.Errorf("view %s: %w", key, err)
	}
	content, err := mgr.cfg.Images.EnsureVolume(ctx, p, c.Name, v.Image)
	if err != nil {
		return "", err
	}
	labels := map[string]string{
		labelGCRoot:         mgr.cfg.Clock.Now().UTC().Format(time.RFC3339),
		labelImageVolumeUID: uid,
		labelImageVolumeRef: content.Name,
		labelImageVolumeID:  content.Digest,
	}
	mounts, err := sn.View(ctx, key, content.ChainID, snapshots.WithLabels(labels))
	if err != nil {
		return "", fmt.Errorf("view %s of %s: %w", key, content.Name, err)
	}
	if err := mgr.mountImageVolume(uid, v.Name, mounts); err != nil {
		if rerr := sn.Remove(context.WithoutCancel(ctx), key); rerr != nil {
			mgr.log.Warn("remove image volume view", "pod", p.FullName(), "uid", uid, "image", content.Name, "err", rerr)
		}
		return "", err
	}
	mgr.log.Info("mounted image volume", "pod", p.FullName(), "uid", uid, "image", content.Name, "digest", content.Digest, "volume", v.Name)
	return imageID(labels), nil
}

// PullImageVolumes makes present the images of the image volumes c mounts
// whose view (if any) holds another image.
func (mgr *Manager) PullImageVolumes(ctx context.Context, p *pod.Pod, c *pod.Container) error {
	ctx = mgr.ctx(ctx)
	sn := mgr.cfg.Snapshots
	for _, vm := range c.VolumeMounts {
		for i := range p.Spec.Volumes {
			v := &p.Spec.Volumes[i]
			if v.Name != vm.Name || v.Image == nil {
				continue
			}
			if sn == nil || mgr.cfg.Images == nil {
				return ErrNoImageVolumes
			}
			ref, err := images.NormalizeRef(v.Image.Reference)
			if err != nil {
				return err
			}
			info, err := sn.Stat(ctx, imageViewKey(p.Metadata.UID, v.Name))
			if err == nil && info.Labels[labelImageVolumeRef] == ref {
				continue
			}
			if _, err := mgr.cfg.Images.EnsureVolumeAhead(ctx, p, c.Name, v.Image); err != nil {
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

// RemoveImageViews removes the image volume views of pod uid; their
// mounts must be gone (Remove). A Manager without Snapshots has none.
func (mgr *Manager) RemoveImageViews(ctx context.Context, uid string) error {
	if mgr.cfg.Snapshots == nil {
		return nil
	}
	ctx = mgr.ctx(ctx)
	sn := mgr.cfg.Snapshots
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

// ImageViewUIDs returns the pod UIDs of the image volume views, so that
// housekeeping finds the views of a pod that left nothing else behind. A
// Manager without Snapshots has none.
func (mgr *Manager) ImageViewUIDs(ctx context.Context) ([]string, error) {
	if mgr.cfg.Snapshots == nil {
		return nil, nil
	}
	var out []string
	err := mgr.cfg.Snapshots.Walk(mgr.ctx(ctx), func(_ context.Context, info snapshots.Info) error {
		if uid := info.Labels[labelImageVolumeUID]; CheckName("pod uid", uid) == nil {
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
func (mgr *Manager) ImageVolumeImages(ctx context.Context) ([]string, error) {
	if mgr.cfg.Snapshots == nil {
		return nil, nil
	}
	var out []string
	err := mgr.cfg.Snapshots.Walk(mgr.ctx(ctx), func(_ context.Context, info snapshots.Info) error {
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
