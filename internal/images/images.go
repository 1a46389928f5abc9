package images

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	ctrimages "github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/pkg/archive/compression"
	"github.com/containerd/errdefs"
	"github.com/distribution/reference"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"tug/internal/pod"
)

// NormalizeRef returns ref fully qualified as docker and Kubernetes read it:
// "busybox:1.35" is "docker.io/library/busybox:1.35", and a reference with
// neither tag nor digest gets ":latest".
func NormalizeRef(ref string) (string, error) {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return "", fmt.Errorf("parse image reference %q: %w", ref, err)
	}
	return reference.TagNameOnly(named).String(), nil
}

// PullPolicy returns c's imagePullPolicy, defaulted as Kubernetes does when
// it is empty: Always for ":latest" or no tag, else IfNotPresent.
func PullPolicy(c *pod.Container) pod.PullPolicy {
	if c.ImagePullPolicy != "" {
		return c.ImagePullPolicy
	}
	named, err := reference.ParseNormalizedNamed(c.Image)
	if err == nil {
		if _, digested := named.(reference.Digested); digested {
			return pod.PullIfNotPresent
		}
		if tagged, ok := named.(reference.Tagged); ok && tagged.Tag() != "latest" {
			return pod.PullIfNotPresent
		}
	}
	return pod.PullAlways
}

// Local returns the image named ref if it is in the image store,
// unpacking it for the snapshotter from local content if needed. A missing
// image (or one whose content is gone) is ErrImageNotPresent.
func (m *Manager) Local(ctx context.Context, ref string) (containerd.Image, error) {
	img, err := m.client.GetImage(ctx, ref)
	if err != nil {
		if errdefs.IsNotFound(err) {
			return nil, fmt.Errorf("image %q: %w", ref, ErrImageNotPresent)
		}
		return nil, fmt.Errorf("get image %q: %w", ref, err)
	}
	if err := checkPinnedDigest(ref, img.Target().Digest.String()); err != nil {
		return nil, fmt.Errorf("image %q: %w (%w)", ref, ErrImageNotPresent, err)
	}
	// A failure to read or unpack an image whose content is damaged is
	// ErrImageDamaged (a pull would find the damaged blobs present and
	// fail the same way), any other ErrImageNotPresent.
	ok, err := m.isUnpacked(ctx, img)
	if err != nil {
		return nil, m.contentDamage(ctx, img.Target(), fmt.Errorf("image %q: %w (check unpacked: %w)", ref, ErrImageNotPresent, err))
	}
	if !ok {
		if err := img.Unpack(ctx, m.cfg.Snapshotter, m.unpackOpts()...); err != nil {
			return nil, m.contentDamage(ctx, img.Target(), fmt.Errorf("image %q: %w (unpack: %w)", ref, ErrImageNotPresent, err))
		}
		m.syncUnpacked(ctx, ref)
	}
	return img, nil
}

// checkPinnedDigest returns ErrImageDigestMismatch when ref pins a digest
// ("name@sha256:...") that is not target, the digest of the image present
// under that name (a sideloaded archive may name an image as it likes).
// A reference without a digest always matches.
func checkPinnedDigest(ref, target string) error {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return fmt.Errorf("parse image reference %q: %w", ref, err)
	}
	d, ok := named.(reference.Digested)
	if !ok || d.Digest().String() == target {
		return nil
	}
	return fmt.Errorf("%w: %s pins %s, the image present under that name is %s", ErrImageDigestMismatch, ref, d.Digest(), target)
}

// archiveKey identifies one version of an archive file.
type archiveKey struct {
	size  int64
	mtime time.Time
}

// leaseReleaseTimeout bounds the release of an import's lease.
const leaseReleaseTimeout = 30 * time.Second

// archivePollInterval is how often Watch looks for new archives.
const archivePollInterval = 2 * time.Second

// isArchive reports whether name is an image archive ImportArchives reads:
// *.tar (docker save, OCI layout, *.docker.tar), *.tar.gz, *.tgz, *.oci.
// Hidden files (a copy tool's temporary names) are skipped by the caller.
func isArchive(name string) bool {
	for _, s := range []string{".tar", ".tar.gz", ".tgz", ".oci"} {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

// pendingArchives lists the archives in ImageDir that have not been
// imported in the version now on disk (name, size and mtime). A missing
// ImageDir holds none.
func (m *Manager) pendingArchives() (map[string]archiveKey, error) {
	entries, err := os.ReadDir(m.cfg.ImageDir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("read image dir: %w", err)
	}
	out := map[string]archiveKey{}
	m.importMu.Lock()
	defer m.importMu.Unlock()
	for _, e := range entries {
		if !e.Type().IsRegular() || !isArchive(e.Name()) || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		key := archiveKey{size: fi.Size(), mtime: fi.ModTime()}
		if m.imported[e.Name()] != key {
			out[e.Name()] = key
		}
	}
	return out, nil
}

// ImportArchives imports every image archive in ImageDir (OCI layouts and
// docker-save archives, optionally gzip or zstd compressed) that was not
// imported already in the same version (file name, size and mtime,
// remembered in memory), and unpacks the images for the snapshotter. Images
// are named by the io.containerd.image.name annotation, a full reference in
// org.opencontainers.image.ref.name, or docker's RepoTags, normalised like
// NormalizeRef. A failed archive is not retried until it changes. The errors
// of all archives are joined.
func (m *Manager) ImportArchives(ctx context.Context) error {
	ctx = m.ctx(ctx)
	pending, err := m.pendingArchives()
	if err != nil {
		return err
	}
	names := make([]string, 0, len(pending))
	for n := range pending {
		names = append(names, n)
	}
	sort.Strings(names)
	var errs []error
	for _, n := range names {
		if err := m.importArchive(ctx, n, pending[n]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Watch imports the archives in ImageDir at start and then whenever
// one appears or changes, polling every 2 s; a new file is imported once it
// has kept its size and mtime for one poll, so that a copy in progress is not
// read half-written. Failures are logged. It returns nil when ctx is done.
func (m *Manager) Watch(ctx context.Context) error {
	if err := m.ImportArchives(ctx); err != nil {
		m.log.Error("import image archives", "err", err)
	}
	ctx = m.ctx(ctx)
	seen := map[string]archiveKey{} // candidates from the last poll
	t := time.NewTicker(archivePollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		pending, err := m.pendingArchives()
		if err != nil {
			m.log.Warn("scan image dir", "file", m.cfg.ImageDir, "err", err)
			continue
		}
		for n, key := range pending {
			if seen[n] != key {
				continue // new or still changing: wait one poll
			}
			if err := m.importArchive(ctx, n, key); err != nil {
				m.log.Error("import image archive", "file", n, "err", err)
			}
		}
		seen = pending
	}
}

// importArchive imports one archive and records it as imported (also when it
// fails, so that a bad file is not retried until it changes).
func (m *Manager) importArchive(ctx context.Context, name string, key archiveKey) error {
	m.importMu.Lock()
	defer m.importMu.Unlock()
	if m.imported[name] == key {
		return nil
	}
	m.imported[name] = key
	path := filepath.Join(m.cfg.ImageDir, name)
	start := time.Now()
	// The import and the unpack share one lease, released on a context of
	// its own: an agent stopping half-way (ctx cancelled) would otherwise
	// leave the client's lease behind, pinning the half-imported content
	// for a day.
	ctx, release, err := m.client.WithLease(ctx)
	if err != nil {
		return fmt.Errorf("import image archive %s: %w", path, err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaseReleaseTimeout)
		defer cancel()
		if err := release(rctx); err != nil {
			m.log.Warn("release image import lease", "file", path, "err", err)
		}
	}()
	imgs, err := m.importFile(ctx, path)
	if err != nil {
		return fmt.Errorf("import image archive %s: %w", path, err)
	}
	if len(imgs) == 0 {
		m.log.Warn("image archive names no image (set the io.containerd.image.name annotation or docker RepoTags)", "file", path)
		return nil
	}
	for _, img := range imgs {
		if err := m.unpackImported(ctx, img); err != nil {
			return fmt.Errorf("import image archive %s: unpack %s: %w", path, img.Name, err)
		}
		m.syncUnpacked(ctx, img.Name)
		m.archiveOf[img.Name] = name
		m.log.Info("imported image", "image", img.Name, "digest", img.Target.Digest.String(), "file", path,
			"duration", time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// importFile imports the archive at path and returns its named images, each
// also recorded under its normalised name.
func (m *Manager) importFile(ctx context.Context, path string) ([]ctrimages.Image, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rd, err := compression.DecompressStream(f)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	imported, err := m.client.Import(ctx, rd, containerd.WithImageRefTranslator(ociRefName))
	if err != nil {
		return nil, err
	}
	var out []ctrimages.Image
	seen := map[string]bool{}
	for _, img := range imported {
		name, err := NormalizeRef(img.Name)
		if err != nil {
			m.log.Warn("image archive has an invalid image name", "file", path, "image", img.Name, "err", err)
			continue
		}
		if err := checkPinnedDigest(name, img.Target.Digest.String()); err != nil {
			// The archive names a digest its content does not have: the
			// name is dropped, never trusted.
			m.log.Warn("image archive names a digest its image does not have; name ignored", "file", path, "image", img.Name, "err", err)
			if err := m.client.ImageService().Delete(ctx, img.Name); err != nil && !errdefs.IsNotFound(err) {
				return nil, fmt.Errorf("drop image name %q: %w", img.Name, err)
			}
			continue
		}
		if name != img.Name {
			img, err = m.tagImage(ctx, name, img.Target)
			if err != nil {
				return nil, err
			}
		}
		if !seen[img.Name] {
			seen[img.Name] = true
			out = append(out, img)
		}
	}
	return out, nil
}

// tagImage points the image record name at target, creating it if needed.
func (m *Manager) tagImage(ctx context.Context, name string, target ocispec.Descriptor) (ctrimages.Image, error) {
	is := m.client.ImageService()
	want := ctrimages.Image{Name: name, Target: target}
	img, err := is.Update(ctx, want, "target")
	if errdefs.IsNotFound(err) {
		img, err = is.Create(ctx, want)
		if errdefs.IsAlreadyExists(err) {
			img, err = is.Update(ctx, want, "target")
		}
	}
	if err != nil {
		return ctrimages.Image{}, fmt.Errorf("tag image %q: %w", name, err)
	}
	return img, nil
}

// ociRefName turns an OCI layout's org.opencontainers.image.ref.name into an
// image name: a full reference ("busybox:1.35", "reg:5000/app:v1") is
// normalised; a bare tag ("1.35", "latest") names no repository and is
// dropped ("").
func ociRefName(s string) string {
	if !strings.ContainsAny(s, ":/@") {
		return ""
	}
	n, err := NormalizeRef(s)
	if err != nil {
		return ""
	}
	return n
}
