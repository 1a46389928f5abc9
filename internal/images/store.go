package images

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	ctrimages "github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/errdefs"
	"github.com/containerd/platforms"
)

// StoredImage is one image of tug's containerd namespace as the image GC
// sees it: the names that share a target digest.
type StoredImage struct {
	Digest    string   // target (manifest or index) digest
	Names     []string // image names pointing at it, sorted
	Size      int64    // content size (compressed layers, config, manifests)
	Pinned    bool     // imported from an archive that is still in ImageDir
	CreatedAt time.Time
}

// Stored lists the namespace's images grouped by target digest. An
// image imported from an archive is Pinned while that archive is still in
// ImageDir (docs/decisions.md, "Reclaim": delete the archive to let the GC
// collect the image). Safe for concurrent use.
func (m *Manager) Stored(ctx context.Context) ([]StoredImage, error) {
	ctx = m.ctx(ctx)
	list, err := m.client.ImageService().List(ctx)
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	m.importMu.Lock()
	archiveOf := make(map[string]string, len(m.archiveOf))
	for k, v := range m.archiveOf {
		archiveOf[k] = v
	}
	m.importMu.Unlock()
	byDigest := map[string]*StoredImage{}
	var order []string
	for _, img := range list {
		d := img.Target.Digest.String()
		si := byDigest[d]
		if si == nil {
			size, err := img.Size(ctx, m.client.ContentStore(), platforms.Default())
			if err != nil {
				m.log.Debug("image size", "image", img.Name, "err", err)
			}
			si = &StoredImage{Digest: d, Size: size, CreatedAt: img.CreatedAt}
			byDigest[d] = si
			order = append(order, d)
		}
		si.Names = append(si.Names, img.Name)
		if a, ok := archiveOf[img.Name]; ok {
			if _, err := os.Stat(filepath.Join(m.cfg.ImageDir, a)); err == nil {
				si.Pinned = true
			}
		}
	}
	out := make([]StoredImage, 0, len(order))
	for _, d := range order {
		slices.Sort(byDigest[d].Names)
		out = append(out, *byDigest[d])
	}
	return out, nil
}

// Remove removes one image name, waiting for containerd's garbage
// collection so that the space is free when it returns. A missing name is
// not an error.
func (m *Manager) Remove(ctx context.Context, name string) error {
	ctx = m.ctx(ctx)
	err := m.client.ImageService().Delete(ctx, name, ctrimages.SynchronousDelete())
	if err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("remove image %q: %w", name, err)
	}
	m.importMu.Lock()
	delete(m.archiveOf, name)
	m.importMu.Unlock()
	return nil
}

// FSPath returns the directory of containerd's snapshotter (its
// exported "root"), the filesystem the imagefs.* signals and the image GC's
// thresholds measure.
func (m *Manager) FSPath(ctx context.Context) (string, error) {
	ctx = m.ctx(ctx)
	resp, err := m.client.IntrospectionService().Plugins(ctx, fmt.Sprintf("type==io.containerd.snapshotter.v1,id==%s", m.cfg.Snapshotter))
	if err != nil {
		return "", fmt.Errorf("introspect snapshotter %s: %w", m.cfg.Snapshotter, err)
	}
	for _, p := range resp.Plugins {
		if root := p.Exports["root"]; root != "" {
			return root, nil
		}
	}
	return "", fmt.Errorf("introspect snapshotter %s: %w", m.cfg.Snapshotter, ErrNoImageFS)
}
