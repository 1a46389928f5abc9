package images

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	ctrimages "github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/errdefs"
	"github.com/containerd/platforms"
	"github.com/opencontainers/image-spec/identity"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"tug/internal/pod"
)

// ErrImageInUse means a damaged image cannot be repaired now: a snapshot
// that descends from its unpacked chain is in use (a running container's),
// so the chain cannot be removed.
var ErrImageInUse = errors.New("images: damaged image in use by a running container")

// ErrCannotRefetch means a damaged image has no source to come back from:
// it was not imported from an archive in ImageDir and c's imagePullPolicy
// is Never. It is left as it is.
var ErrCannotRefetch = errors.New("images: damaged image has no archive and pull policy Never")

// Repair removes c's image, found damaged (pod.ErrImageDamaged), and makes
// it present again: its unpacked snapshot chain under the snapshotter and
// every snapshot that descends from it (containers' snapshots that
// removable allows: removable is asked about each active one, and one it
// refuses fails the repair with ErrImageInUse), the image names that point
// at its target, and its content (every blob of it that is damaged is
// deleted; the others go with containerd's garbage collection unless
// another image holds them). Then the image is imported again from the
// archive in ImageDir it came from, or else pulled again (with the Pulling
// and Pulled events of a pull). A Warn names the image and what was wrong;
// the caller says whether the container then started.
// Repairs of one Manager run one at a time.
//
// A layer shared with another image is removed with the chain when the
// damaged image's chain holds it: that image is unpacked again from its
// content at its next start (Local).
func (m *Manager) Repair(ctx context.Context, p *pod.Pod, c *pod.Container, damage error, removable func(key string) bool) error {
	ctx = m.ctx(ctx)
	ref, err := NormalizeRef(c.Image)
	if err != nil {
		return err
	}
	m.repairMu.Lock()
	defer m.repairMu.Unlock()
	m.importMu.Lock()
	archive, fromArchive := m.archiveOf[ref]
	m.importMu.Unlock()
	if !fromArchive && PullPolicy(c) == pod.PullNever {
		return fmt.Errorf("repair image %q: %w", ref, ErrCannotRefetch)
	}
	m.log.Warn("image damaged; removing its snapshots and content to fetch it again", "image", ref, "err", damage)
	start := time.Now()
	if err := m.removeDamaged(ctx, ref, removable); err != nil {
		return fmt.Errorf("repair image %q: %w", ref, err)
	}
	if fromArchive {
		key, err := m.forgetImport(archive)
		if err != nil {
			return fmt.Errorf("repair image %q: %w", ref, err)
		}
		if err := m.importArchive(ctx, archive, key); err != nil {
			return fmt.Errorf("repair image %q: %w", ref, err)
		}
	} else {
		r := request{pod: p, container: c.Name, image: c.Image, policy: PullPolicy(c), unpack: true}
		if err := m.pullFor(ctx, r, ref); err != nil {
			m.failed(ctx, r, err)
			return fmt.Errorf("repair image %q: %w", ref, err)
		}
	}
	how := "pulled"
	if fromArchive {
		how = "imported from " + archive
	}
	m.log.Info("fetched a damaged image again", "image", ref, "how", how, "duration", time.Since(start).Round(time.Millisecond))
	return nil
}

// forgetImport makes the archive name of ImageDir importable again and
// returns the key of its version on disk.
func (m *Manager) forgetImport(name string) (archiveKey, error) {
	fi, err := os.Stat(filepath.Join(m.cfg.ImageDir, name))
	if err != nil {
		return archiveKey{}, fmt.Errorf("archive of the image: %w", err)
	}
	m.importMu.Lock()
	delete(m.imported, name)
	m.importMu.Unlock()
	return archiveKey{size: fi.Size(), mtime: fi.ModTime()}, nil
}

// removeDamaged removes ref's snapshot chain and what descends from it,
// its names and its damaged blobs (see Repair).
func (m *Manager) removeDamaged(ctx context.Context, ref string, removable func(string) bool) error {
	is := m.client.ImageService()
	img, err := is.Get(ctx, ref)
	if errdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get image: %w", err)
	}
	cs := m.client.ContentStore()
	blobs := []ocispec.Descriptor{img.Target}
	var chain []string
	if manifest, err := ctrimages.Manifest(ctx, cs, img.Target, platforms.Default()); err == nil {
		blobs = append(blobs, manifest.Config)
		blobs = append(blobs, manifest.Layers...)
	}
	if diffIDs, err := img.RootFS(ctx, cs, platforms.Default()); err == nil {
		for _, id := range identity.ChainIDs(diffIDs) {
			chain = append(chain, id.String())
		}
	} else {
		// Without the config the chain is unknown: containerd's garbage
		// collection removes it once the content that names it is gone.
		m.log.Warn("damaged image: its layers cannot be read; its snapshots go with its content", "image", ref, "err", err)
	}
	if err := m.removeChain(ctx, chain, removable); err != nil {
		return err
	}
	// Every blob that does not verify is deleted; the others are
	// collected with the image unless another image holds them.
	var damaged []ocispec.Descriptor
	for _, d := range blobs {
		if err := verifyBlob(ctx, cs, d); errors.Is(err, pod.ErrImageDamaged) {
			damaged = append(damaged, d)
		}
	}
	names, err := is.List(ctx, "target.digest=="+img.Target.Digest.String())
	if err != nil {
		return fmt.Errorf("list images of %s: %w", img.Target.Digest, err)
	}
	if !slices.ContainsFunc(names, func(i ctrimages.Image) bool { return i.Name == ref }) {
		names = append(names, img)
	}
	for _, d := range damaged {
		if err := cs.Delete(ctx, d.Digest); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("delete blob %s: %w", d.Digest, err)
		}
	}
	for i, n := range names {
		var opts []ctrimages.DeleteOpt
		if i == len(names)-1 {
			opts = append(opts, ctrimages.SynchronousDelete())
		}
		if err := is.Delete(ctx, n.Name, opts...); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("remove image %q: %w", n.Name, err)
		}
		m.importMu.Lock()
		delete(m.archiveOf, n.Name)
		m.importMu.Unlock()
	}
	return nil
}

// removeChain removes the snapshots of chain (chain IDs, base first) and
// every snapshot that descends from one of them, children before their
// parents. An active snapshot removable refuses is ErrImageInUse, and
// nothing is removed.
func (m *Manager) removeChain(ctx context.Context, chain []string, removable func(string) bool) error {
	if len(chain) == 0 {
		return nil
	}
	sn := m.client.SnapshotService(m.cfg.Snapshotter)
	infos := map[string]snapshots.Info{}
	if err := sn.Walk(ctx, func(_ context.Context, i snapshots.Info) error {
		infos[i.Name] = i
		return nil
	}); err != nil {
		return fmt.Errorf("list snapshots: %w", err)
	}
	doomed := removalOrder(infos, chain)
	for _, name := range doomed {
		if i := infos[name]; i.Kind != snapshots.KindCommitted && removable != nil && !removable(name) {
			return fmt.Errorf("%w: snapshot %s", ErrImageInUse, name)
		}
	}
	for _, name := range doomed {
		if err := sn.Remove(ctx, name); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("remove snapshot %s: %w", name, err)
		}
	}
	return nil
}

// removalOrder returns the snapshots of infos that are in chain or descend
// from one of them, each after all of its children.
func removalOrder(infos map[string]snapshots.Info, chain []string) []string {
	children := map[string][]string{}
	for name, i := range infos {
		if i.Parent != "" {
			children[i.Parent] = append(children[i.Parent], name)
		}
	}
	for _, c := range children {
		slices.Sort(c)
	}
	var out []string
	seen := map[string]bool{}
	var visit func(string)
	visit = func(name string) { // post-order: children first
		if seen[name] {
			return
		}
		seen[name] = true
		for _, c := range children[name] {
			visit(c)
		}
		if _, ok := infos[name]; ok {
			out = append(out, name)
		}
	}
	for i := len(chain) - 1; i >= 0; i-- {
		visit(chain[i])
	}
	return out
}
