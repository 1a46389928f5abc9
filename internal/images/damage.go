package images

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/content"
	ctrimages "github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/core/leases"
	"github.com/containerd/containerd/v2/core/mount"
	"github.com/containerd/errdefs"
	"github.com/containerd/platforms"
	"github.com/opencontainers/image-spec/identity"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"tug/internal/pod"
)

// Damaged images. A power cut can leave containerd's committed snapshots
// with files that are empty or missing (the unpack wrote them to the page
// cache, the metadata that says "committed" reached the disk first), and
// content blobs that are short or gone. Such an image is present as far as
// containerd's metadata says; it fails when it runs. The checks below look
// at the files themselves, not at an error's text: an entrypoint that is
// missing, 0 bytes long or starts with NUL bytes in a read-only view of the
// image's snapshot chain, and blobs whose size or digest is not the one
// their descriptor names. Both return errors wrapping pod.ErrImageDamaged;
// Repair removes such an image and pulls or imports it again.

// defaultPath is the PATH a process without one searches (runc's and
// containerd's oci default).
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// checkLeaseExpiry bounds a check's view snapshot if tug dies holding it.
const checkLeaseExpiry = 10 * time.Minute

// CheckEntrypoint looks at the entrypoint a process of img would exec,
// args0 searched in the PATH of env (and relative to cwd when it is a
// relative path with a slash), in a read-only view of img's unpacked
// snapshot chain. A candidate that is missing everywhere, 0 bytes long or
// whose first bytes are all NUL is an error wrapping pod.ErrImageDamaged;
// anything else (a file of another format included: binfmt_misc may run it)
// is nil. It mounts the view, so it runs only after a start failed or a
// container exited (see podruntime), not on every start. Safe for
// concurrent use.
func (m *Manager) CheckEntrypoint(ctx context.Context, img containerd.Image, args0 string, env []string, cwd string) error {
	ctx = m.ctx(ctx)
	if args0 == "" {
		return nil
	}
	diffIDs, err := img.RootFS(ctx)
	if err != nil {
		return m.contentDamage(ctx, img.Target(), fmt.Errorf("read layers of %s: %w", img.Name(), err))
	}
	if len(diffIDs) == 0 {
		return nil
	}
	chain := identity.ChainID(diffIDs).String()
	ctx, done, err := m.client.WithLease(ctx, leases.WithRandomID(), leases.WithExpiration(checkLeaseExpiry))
	if err != nil {
		return fmt.Errorf("check image %s: %w", img.Name(), err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaseReleaseTimeout)
		defer cancel()
		_ = done(rctx)
	}()
	sn := m.client.SnapshotService(m.cfg.Snapshotter)
	key := "tug-check-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	mounts, err := sn.View(ctx, key, chain)
	if err != nil {
		if errdefs.IsNotFound(err) {
			return nil // not unpacked: the next Ensure unpacks it
		}
		return fmt.Errorf("check image %s: view snapshot %s: %w", img.Name(), chain, err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaseReleaseTimeout)
		defer cancel()
		if err := sn.Remove(rctx, key); err != nil && !errdefs.IsNotFound(err) {
			m.log.Warn("remove image check view", "image", img.Name(), "err", err)
		}
	}()
	var found error
	err = mount.WithReadonlyTempMount(ctx, mounts, func(root string) error {
		found = checkEntrypointIn(root, args0, env, cwd)
		return nil
	})
	if err != nil {
		return fmt.Errorf("check image %s: mount view: %w", img.Name(), err)
	}
	if found != nil {
		return fmt.Errorf("image %s: %w", img.Name(), found)
	}
	return nil
}

// checkEntrypointIn is CheckEntrypoint on a mounted root filesystem.
func checkEntrypointIn(root, args0 string, env []string, cwd string) error {
	var candidates []string
	switch {
	case strings.HasPrefix(args0, "/"):
		candidates = []string{args0}
	case strings.Contains(args0, "/"):
		candidates = []string{path.Join("/", cwd, args0)}
	default:
		p := defaultPath
		for _, e := range env {
			if v, ok := strings.CutPrefix(e, "PATH="); ok {
				p = v
			}
		}
		for _, dir := range filepath.SplitList(p) {
			if dir == "" {
				dir = "."
			}
			candidates = append(candidates, path.Join("/", cwd, dir, args0))
			if strings.HasPrefix(dir, "/") {
				candidates[len(candidates)-1] = path.Join(dir, args0)
			}
		}
	}
	for _, c := range candidates {
		host, err := resolveIn(root, c)
		if err != nil {
			continue // missing here (or a broken link): the next candidate
		}
		fi, err := os.Lstat(host)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if fi.Size() == 0 {
			return fmt.Errorf("%w: entrypoint %s is empty", pod.ErrImageDamaged, c)
		}
		f, err := os.Open(host)
		if err != nil {
			return nil // not ours to judge
		}
		head := make([]byte, 4)
		n, _ := io.ReadFull(f, head)
		f.Close()
		if n > 0 && bytes.Count(head[:n], []byte{0}) == n {
			return fmt.Errorf("%w: entrypoint %s starts with NUL bytes", pod.ErrImageDamaged, c)
		}
		return nil
	}
	return fmt.Errorf("%w: entrypoint %s not found in the image", pod.ErrImageDamaged, args0)
}

// errLinkLoop is a path with too many symlinks to resolve.
var errLinkLoop = errors.New("too many levels of symbolic links")

// resolveIn returns the host path of name (absolute, in the image) below
// root, following symbolic links as the image sees them: an absolute
// target starts again at root, and ".." never climbs above root.
func resolveIn(root, name string) (string, error) {
	parts := strings.Split(strings.Trim(path.Clean(name), "/"), "/")
	cur := "/" // resolved so far, in the image
	hops := 0
	for len(parts) > 0 {
		p := parts[0]
		parts = parts[1:]
		if p == "" || p == "." {
			continue
		}
		if p == ".." {
			cur = path.Dir(cur)
			continue
		}
		next := path.Join(cur, p)
		fi, err := os.Lstat(filepath.Join(root, next))
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if hops++; hops > 40 {
			return "", errLinkLoop
		}
		target, err := os.Readlink(filepath.Join(root, next))
		if err != nil {
			return "", err
		}
		if strings.HasPrefix(target, "/") {
			cur = "/"
		}
		parts = append(strings.Split(strings.Trim(target, "/"), "/"), parts...)
	}
	return filepath.Join(root, cur), nil
}

// CheckContent verifies the blobs of img's manifest for the host's
// platform (the manifest, its config and its layers): each must be in the
// content store with the size and digest its descriptor names. A blob that
// is missing, short or does not verify is an error wrapping
// pod.ErrImageDamaged. It reads every layer, so it runs only after reading
// or unpacking the image failed.
func (m *Manager) CheckContent(ctx context.Context, target ocispec.Descriptor) error {
	return m.checkContent(m.ctx(ctx), target)
}

func (m *Manager) checkContent(ctx context.Context, target ocispec.Descriptor) error {
	return m.checkBlobs(ctx, target, true)
}

// checkBlobs is CheckContent; with layers false the layers' sizes are
// checked but their bytes are not read (the manifest and config are
// small and always verified).
func (m *Manager) checkBlobs(ctx context.Context, target ocispec.Descriptor, layers bool) error {
	cs := m.client.ContentStore()
	if err := verifyBlob(ctx, cs, target); err != nil {
		return err
	}
	manifest, err := ctrimages.Manifest(ctx, cs, target, platforms.Default())
	if err != nil {
		return fmt.Errorf("%w: manifest of %s: %w", pod.ErrImageDamaged, target.Digest, err)
	}
	if err := verifyBlob(ctx, cs, manifest.Config); err != nil {
		return err
	}
	for _, d := range manifest.Layers {
		check := verifyBlob
		if !layers {
			check = checkSize
		}
		if err := check(ctx, cs, d); err != nil {
			return err
		}
	}
	return nil
}

// presentDamage returns the damage of the image present under ref after
// a pull of it failed, or nil: blobs missing or of the wrong size, a
// manifest or config that does not verify (the layers' bytes are not read:
// a failed pull may be retried often, and containerd fsyncs a blob when it
// commits it, so a layer a power cut damaged is short, not rewritten).
// Only a container image's request (r.unpack) is looked at: a damaged
// image volume is not repaired.
func (m *Manager) presentDamage(ctx context.Context, r request, ref string) error {
	if !r.unpack {
		return nil
	}
	img, err := m.client.ImageService().Get(ctx, ref)
	if err != nil {
		return nil
	}
	if err := m.checkBlobs(ctx, img.Target, false); errors.Is(err, pod.ErrImageDamaged) {
		return err
	}
	return nil
}

// checkSize checks that the blob of d is present with d's size.
func checkSize(ctx context.Context, cs content.Store, d ocispec.Descriptor) error {
	info, err := cs.Info(ctx, d.Digest)
	if err != nil {
		if errdefs.IsNotFound(err) {
			return fmt.Errorf("%w: blob %s is missing", pod.ErrImageDamaged, d.Digest)
		}
		return fmt.Errorf("blob %s: %w", d.Digest, err)
	}
	if d.Size > 0 && info.Size != d.Size {
		return fmt.Errorf("%w: blob %s has %d bytes, want %d", pod.ErrImageDamaged, d.Digest, info.Size, d.Size)
	}
	return nil
}

// contentDamage returns the content damage of target if there is any,
// else cause. The damage does not wrap cause (only says it): a damaged
// image must not read as ErrImageNotPresent, which Ensure answers with a
// pull that finds the damaged blobs present and fails the same way.
func (m *Manager) contentDamage(ctx context.Context, target ocispec.Descriptor, cause error) error {
	if err := m.checkContent(ctx, target); errors.Is(err, pod.ErrImageDamaged) {
		return fmt.Errorf("%w (%v)", err, cause)
	}
	return cause
}

// verifyBlob checks that the blob of d is present with d's size and
// digest.
func verifyBlob(ctx context.Context, cs content.Store, d ocispec.Descriptor) error {
	if err := checkSize(ctx, cs, d); err != nil {
		return err
	}
	ra, err := cs.ReaderAt(ctx, d)
	if err != nil {
		if errdefs.IsNotFound(err) {
			return fmt.Errorf("%w: blob %s is missing", pod.ErrImageDamaged, d.Digest)
		}
		return fmt.Errorf("open blob %s: %w", d.Digest, err)
	}
	defer ra.Close()
	v := d.Digest.Verifier()
	if _, err := io.Copy(v, content.NewReader(ra)); err != nil {
		return fmt.Errorf("%w: read blob %s: %w", pod.ErrImageDamaged, d.Digest, err)
	}
	if !v.Verified() {
		return fmt.Errorf("%w: blob %s does not verify", pod.ErrImageDamaged, d.Digest)
	}
	return nil
}
