package podruntime

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/containerd/containerd/errdefs"
	"github.com/containerd/containerd/images"
	"github.com/containerd/containerd/platforms"

	"tug/internal/pod"
	"tug/internal/podlogs"
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

// StoredImages lists the namespace's images grouped by target digest. An
// image imported from an archive is Pinned while that archive is still in
// ImageDir (docs/decisions.md, "Reclaim": delete the archive to let the GC
// collect the image). Safe for concurrent use.
func (r *Runtime) StoredImages(ctx context.Context) ([]StoredImage, error) {
	ctx = r.ctx(ctx)
	list, err := r.client.ImageService().List(ctx)
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	r.importMu.Lock()
	archiveOf := make(map[string]string, len(r.archiveOf))
	for k, v := range r.archiveOf {
		archiveOf[k] = v
	}
	r.importMu.Unlock()
	byDigest := map[string]*StoredImage{}
	var order []string
	for _, img := range list {
		d := img.Target.Digest.String()
		si := byDigest[d]
		if si == nil {
			size, err := img.Size(ctx, r.client.ContentStore(), platforms.Default())
			if err != nil {
				r.log.Debug("image size", "image", img.Name, "err", err)
			}
			si = &StoredImage{Digest: d, Size: size, CreatedAt: img.CreatedAt}
			byDigest[d] = si
			order = append(order, d)
		}
		si.Names = append(si.Names, img.Name)
		if a, ok := archiveOf[img.Name]; ok {
			if _, err := os.Stat(filepath.Join(r.cfg.ImageDir, a)); err == nil {
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

// RemoveImage removes one image name, waiting for containerd's garbage
// collection so that the space is free when it returns. A missing name is
// not an error.
func (r *Runtime) RemoveImage(ctx context.Context, name string) error {
	ctx = r.ctx(ctx)
	err := r.client.ImageService().Delete(ctx, name, images.SynchronousDelete())
	if err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("remove image %q: %w", name, err)
	}
	r.importMu.Lock()
	delete(r.archiveOf, name)
	r.importMu.Unlock()
	return nil
}

// ImageFSPath returns the directory of containerd's snapshotter (its
// exported "root"), the filesystem the imagefs.* signals and the image GC's
// thresholds measure.
func (r *Runtime) ImageFSPath(ctx context.Context) (string, error) {
	ctx = r.ctx(ctx)
	resp, err := r.client.IntrospectionService().Plugins(ctx, []string{fmt.Sprintf("type==io.containerd.snapshotter.v1,id==%s", r.cfg.Snapshotter)})
	if err != nil {
		return "", fmt.Errorf("introspect snapshotter %s: %w", r.cfg.Snapshotter, err)
	}
	for _, p := range resp.Plugins {
		if root := p.Exports["root"]; root != "" {
			return root, nil
		}
	}
	return "", fmt.Errorf("introspect snapshotter %s: %w", r.cfg.Snapshotter, ErrNoImageFS)
}

// EmptyDirUsage returns the disk space (allocated blocks) and inodes used
// under the pod's emptyDir volume name, for the eviction manager's
// sizeLimit check. A missing directory uses nothing. Symlinks are not
// followed. Safe for concurrent use.
func (r *Runtime) EmptyDirUsage(uid, name string) (bytes, inodes int64, err error) {
	root := r.emptyDirPath(uid, name)
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return nil // removed meanwhile
		}
		inodes++
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			bytes += st.Blocks * 512
		} else {
			bytes += fi.Size()
		}
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("usage of emptyDir %s of pod %s: %w", name, uid, err)
	}
	return bytes, inodes, nil
}

// ContainerDiskUsage returns what container id uses of the node's disk:
// its writable layer (the snapshotter's usage of its active snapshot) and
// the log files of its attempt, for the eviction manager's ephemeral-storage
// limits. Safe for concurrent use.
func (r *Runtime) ContainerDiskUsage(ctx context.Context, p *pod.Pod, c pod.RuntimeContainer) (bytes, inodes int64, err error) {
	ctx = r.ctx(ctx)
	// The container's snapshot is keyed by its ID (startContainer): one
	// call, no container lookup.
	u, err := r.client.SnapshotService(r.cfg.Snapshotter).Usage(ctx, c.ID)
	if err != nil {
		return 0, 0, fmt.Errorf("disk usage of container %s: %w", c.ID, notFound(err))
	}
	bytes, inodes = u.Size, u.Inodes
	// The file driver's raw output not converted yet is on the disk too
	// (its converted part is punched out: count allocated blocks).
	for _, l := range podlogs.Files(r.cfg.LogsDir, r.cfg.RootDir, p, c.Name, c.Attempt) {
		if fi, err := os.Lstat(l); err == nil && fi.Mode().IsRegular() {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				bytes += st.Blocks * 512
			} else {
				bytes += fi.Size()
			}
			inodes++
		}
	}
	return bytes, inodes, nil
}
