package images

import (
	"context"
	"errors"
	"fmt"
	"strings"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/content"
	ctrimages "github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/pkg/rootfs"
	"github.com/containerd/errdefs"
	"github.com/containerd/platforms"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"tug/internal/pod"
)

// ErrNotUnpackable means an image volume's image or artifact has a layer
// that is not a tar archive (plain, gzip or zstd), so it has no files to
// mount.
var ErrNotUnpackable = errors.New("images: layer is not a tar archive")

// labelVolumeSnapshot is the label, on an image volume's manifest blob,
// that keeps the snapshot of its layers from containerd's garbage
// collection for as long as the manifest is kept (the unpacker's label on
// an image's config does the same; an artifact's config may be the empty
// descriptor that many artifacts share, so the manifest carries it).
const labelVolumeSnapshot = "containerd.io/gc.ref.snapshot.%s/tug-volume"

// VolumeContent is an image volume's image made present: the snapshot of
// its layers, ready for a View.
type VolumeContent struct {
	Name    string // the normalised reference
	Digest  string // the digest of the image's manifest or index
	ChainID string // the snapshot of all its layers, in the Snapshotter
}

// VolumePullPolicy returns src's pullPolicy, defaulted as a container's
// imagePullPolicy is (PullPolicy).
func VolumePullPolicy(src *pod.ImageVolumeSource) pod.PullPolicy {
	return PullPolicy(&pod.Container{Image: src.Reference, ImagePullPolicy: src.PullPolicy})
}

// EnsureVolume makes the image or artifact of an image volume present as
// its pullPolicy says, exactly as Ensure does a container's image (the
// same events, naming container, and the same errors: ErrImageNeverPull,
// ErrImagePull), and its layers unpacked into one snapshot chain. The
// layers are applied with containerd's diff service rather than its
// unpacker, so that an artifact whose config is not an image config (the
// empty descriptor, a custom media type) unpacks as well as an image;
// for an image the chain is the one its containers use.
func (m *Manager) EnsureVolume(ctx context.Context, p *pod.Pod, container string, src *pod.ImageVolumeSource) (VolumeContent, error) {
	r := request{pod: p, container: container, image: src.Reference, policy: VolumePullPolicy(src)}
	return ensure(m.ctx(ctx), m, r, m.localVolume)
}

// EnsureVolumeAhead is EnsureVolume ahead of a start, as EnsureAhead is
// Ensure: the start that follows does not pull the volume's image again.
func (m *Manager) EnsureVolumeAhead(ctx context.Context, p *pod.Pod, container string, src *pod.ImageVolumeSource) (VolumeContent, error) {
	r := request{pod: p, container: container, image: src.Reference, policy: VolumePullPolicy(src), ahead: true}
	return ensure(m.ctx(ctx), m, r, m.localVolume)
}

// localVolume returns the image named ref if it is in the image store,
// with its layers unpacked. A missing image is ErrImageNotPresent.
func (m *Manager) localVolume(ctx context.Context, ref string) (VolumeContent, error) {
	img, err := m.client.ImageService().Get(ctx, ref)
	if err != nil {
		if errdefs.IsNotFound(err) {
			return VolumeContent{}, fmt.Errorf("image %q: %w", ref, ErrImageNotPresent)
		}
		return VolumeContent{}, fmt.Errorf("get image %q: %w", ref, err)
	}
	if err := checkPinnedDigest(ref, img.Target.Digest.String()); err != nil {
		return VolumeContent{}, fmt.Errorf("image %q: %w (%w)", ref, ErrImageNotPresent, err)
	}
	chain, err := m.unpackVolume(ctx, img)
	if err != nil {
		return VolumeContent{}, fmt.Errorf("image %q: %w", ref, err)
	}
	return VolumeContent{Name: ref, Digest: img.Target.Digest.String(), ChainID: chain}, nil
}

// unpackVolume applies the layers of img's manifest (for this platform,
// if img is an index) into snapshots, unless they are there already, and
// labels the manifest so that the chain lives as long as it does. Missing
// content is ErrImageNotPresent.
func (m *Manager) unpackVolume(ctx context.Context, img ctrimages.Image) (string, error) {
	cs := m.client.ContentStore()
	manifest, err := ctrimages.Manifest(ctx, cs, img.Target, platforms.Default())
	if err != nil {
		if errdefs.IsNotFound(err) {
			return "", fmt.Errorf("%w (read manifest: %w)", ErrImageNotPresent, err)
		}
		return "", fmt.Errorf("read manifest: %w", err)
	}
	layers := make([]rootfs.Layer, 0, len(manifest.Layers))
	for _, desc := range manifest.Layers {
		l, err := volumeLayer(ctx, cs, desc)
		if err != nil {
			return "", err
		}
		layers = append(layers, l)
	}
	if len(layers) == 0 {
		return "", fmt.Errorf("%w: the manifest has no layer", ErrNotUnpackable)
	}
	// The snapshots are held by a lease until the manifest's label holds
	// them.
	ctx, release, err := m.client.WithLease(ctx)
	if err != nil {
		return "", fmt.Errorf("unpack: %w", err)
	}
	defer func() {
		if err := release(context.WithoutCancel(ctx)); err != nil {
			m.log.Warn("release image volume unpack lease", "image", img.Name, "err", err)
		}
	}()
	chain, err := rootfs.ApplyLayers(ctx, layers, m.client.SnapshotService(m.cfg.Snapshotter), m.client.DiffService())
	if err != nil {
		return "", fmt.Errorf("unpack: %w", err)
	}
	mdesc, err := manifestDescriptor(ctx, cs, img.Target)
	if err != nil {
		return "", err
	}
	info, err := cs.Info(ctx, mdesc.Digest)
	if err != nil {
		return "", fmt.Errorf("unpack: %w", err)
	}
	key := fmt.Sprintf(labelVolumeSnapshot, m.cfg.Snapshotter)
	if info.Labels[key] != chain.String() {
		info.Labels = map[string]string{key: chain.String()}
		if _, err := cs.Update(ctx, info, "labels."+key); err != nil {
			return "", fmt.Errorf("unpack: label manifest: %w", err)
		}
	}
	return chain.String(), nil
}

// unpackImported unpacks an imported image for the snapshotter: a runnable
// image with containerd's unpacker, an artifact (a config that is not an
// image config) as an image volume's layers are (unpackVolume), since only
// an image volume can use it.
func (m *Manager) unpackImported(ctx context.Context, img ctrimages.Image) error {
	manifest, err := ctrimages.Manifest(ctx, m.client.ContentStore(), img.Target, platforms.Default())
	if err != nil {
		return fmt.Errorf("read manifest: %w", err)
	}
	switch manifest.Config.MediaType {
	case ocispec.MediaTypeImageConfig, ctrimages.MediaTypeDockerSchema2Config:
		return containerd.NewImage(m.client, img).Unpack(ctx, m.cfg.Snapshotter, m.unpackOpts()...)
	}
	_, err = m.unpackVolume(ctx, img)
	return err
}

// manifestDescriptor returns the descriptor of target's manifest for this
// platform: target itself, or its child if target is an index.
func manifestDescriptor(ctx context.Context, cs content.Store, target ocispec.Descriptor) (ocispec.Descriptor, error) {
	var found *ocispec.Descriptor
	err := ctrimages.Walk(ctx, ctrimages.HandlerFunc(func(ctx context.Context, d ocispec.Descriptor) ([]ocispec.Descriptor, error) {
		switch d.MediaType {
		case ctrimages.MediaTypeDockerSchema2Manifest, ocispec.MediaTypeImageManifest:
			if found == nil {
				found = &d
			}
			return nil, nil
		case ctrimages.MediaTypeDockerSchema2ManifestList, ocispec.MediaTypeImageIndex:
			children, err := ctrimages.Children(ctx, cs, d)
			if err != nil {
				return nil, err
			}
			var keep []ocispec.Descriptor
			for _, c := range children {
				if c.Platform == nil || platforms.Default().Match(*c.Platform) {
					keep = append(keep, c)
				}
			}
			return keep, nil
		}
		return nil, nil
	}), target)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("read manifest: %w", err)
	}
	if found == nil {
		return ocispec.Descriptor{}, fmt.Errorf("%w: no manifest for this platform", ErrImageNotPresent)
	}
	return *found, nil
}

// volumeLayer returns desc as a layer to apply: its diff ID (read from
// containerd's label, or computed and labelled), and a media type the diff
// service applies (a data layer's own type, say
// "application/vnd.example.data.v1.tar+gzip", is applied as a docker layer,
// whose compression is detected from its bytes).
func volumeLayer(ctx context.Context, cs content.Store, desc ocispec.Descriptor) (rootfs.Layer, error) {
	if !isTarLayer(desc.MediaType) {
		return rootfs.Layer{}, fmt.Errorf("%w: layer %s has media type %q", ErrNotUnpackable, desc.Digest, desc.MediaType)
	}
	diffID, err := ctrimages.GetDiffID(ctx, cs, desc)
	if err != nil {
		if errdefs.IsNotFound(err) {
			return rootfs.Layer{}, fmt.Errorf("%w (layer %s: %w)", ErrImageNotPresent, desc.Digest, err)
		}
		return rootfs.Layer{}, fmt.Errorf("layer %s: %w", desc.Digest, err)
	}
	blob := desc
	if !ctrimages.IsLayerType(desc.MediaType) {
		blob.MediaType = ctrimages.MediaTypeDockerSchema2Layer
	}
	return rootfs.Layer{
		Blob: blob,
		Diff: ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayer, Digest: diffID},
	}, nil
}

// isTarLayer reports whether a layer of media type t is a tar archive: an
// image layer, or a data layer whose type ends in "tar", "tar+gzip" or
// "tar+zstd".
func isTarLayer(t string) bool {
	if ctrimages.IsLayerType(t) {
		return true
	}
	for _, s := range []string{".tar", ".tar+gzip", ".tar+zstd"} {
		if strings.HasSuffix(t, s) {
			return true
		}
	}
	return false
}
