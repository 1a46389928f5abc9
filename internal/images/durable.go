package images

import (
	"context"
	"fmt"
	"strings"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/diff"
	"golang.org/x/sys/unix"
)

// Durable pulls and imports. containerd writes content blobs with an fsync
// at commit, and its metadata (bolt) commits with an fsync, but the files
// an unpack writes into a snapshot are left in the page cache: a power cut
// soon after a pull can leave a committed snapshot whose files are empty
// (containerd#8895, #5854). containerd 2.x fixes this when asked
// (diff.WithSyncFs, the CRI's image_pull_with_sync_fs); tug pulls through
// the client, so it asks in its own unpack options (unpackOpts). A 1.x
// daemon ignores the option, so there tug itself calls syncfs(2) on the
// snapshotter's filesystem after an unpack, before the image is reported
// pulled or imported (syncUnpacked). docs/decisions.md, "Durable pulls".

// unpackOpts are the unpack options of every pull and import: the daemon
// syncs the filesystem of each layer it applies (containerd 2.x).
func (m *Manager) unpackOpts() []containerd.UnpackOpt {
	if m.cfg.SkipSyncFS {
		return nil
	}
	return []containerd.UnpackOpt{containerd.WithUnpackApplyOpts(diff.WithSyncFs(true))}
}

// syncUnpacked makes what an unpack wrote durable on a daemon that does not
// sync it itself (containerd 1.x): one syncfs(2) of the snapshotter's
// filesystem. A failure is logged (Warn): the image is usable, only not
// yet durable, and a damaged image is repaired when it fails to start.
func (m *Manager) syncUnpacked(ctx context.Context, ref string) {
	if m.cfg.SkipSyncFS {
		return
	}
	m.syncOnce.Do(func() { m.syncRoot, m.syncErr = m.syncTarget(ctx) })
	if m.syncErr != nil {
		m.log.Warn("cannot make unpacked images durable", "image", ref, "err", m.syncErr)
		return
	}
	if m.syncRoot == "" {
		return // the daemon syncs (diff.WithSyncFs)
	}
	if err := syncFS(m.syncRoot); err != nil {
		m.log.Warn("sync the snapshotter's filesystem", "image", ref, "file", m.syncRoot, "err", err)
	}
}

// syncTarget returns the directory tug syncs after an unpack: the
// snapshotter's root on a containerd 1.x daemon, "" on 2.x and later,
// which syncs when the unpack asks it to.
func (m *Manager) syncTarget(ctx context.Context) (string, error) {
	v, err := m.client.Version(m.ctx(ctx))
	if err != nil {
		return "", fmt.Errorf("containerd version: %w", err)
	}
	if major, _, _ := strings.Cut(strings.TrimPrefix(v.Version, "v"), "."); major != "0" && major != "1" {
		return "", nil
	}
	return m.FSPath(ctx)
}

// syncFS calls syncfs(2) on the filesystem that holds dir.
func syncFS(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", dir, err)
	}
	defer unix.Close(fd)
	if err := unix.Syncfs(fd); err != nil {
		return fmt.Errorf("syncfs %s: %w", dir, err)
	}
	return nil
}
