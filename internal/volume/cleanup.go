package volume

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/containerd/containerd/v2/core/mount"
	"golang.org/x/sys/unix"
)

// removePodDir unmounts what is mounted below the pod directory of uid
// (lazily: a mount still busy is detached, never deleted through) and
// removes it.
func (mgr *Manager) removePodDir(uid string) error {
	dir := mgr.podDir(uid)
	real, err := filepath.EvalSymlinks(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pod directory of %s: %w", uid, err)
	}
	// Staging mounts first, made private as unstage does (they are
	// normally gone once a container has started).
	stages, _ := filepath.Glob(filepath.Join(real, "volume-subpaths", "*"))
	for _, d := range stages {
		if err := Unstage(d); err != nil {
			return fmt.Errorf("pod directory of %s: %w", uid, err)
		}
	}
	if err := mount.UnmountRecursive(real, unix.MNT_DETACH); err != nil {
		return fmt.Errorf("pod directory of %s: unmount volumes: %w", uid, err)
	}
	if err := removeTree(real); err != nil {
		return fmt.Errorf("pod directory of %s: %w", uid, err)
	}
	return nil
}

// EmptyDirUsage returns the disk space (allocated blocks) and inodes used
// under the pod's emptyDir volume name, for the eviction manager's
// sizeLimit check. A missing directory uses nothing. Symlinks are not
// followed. Safe for concurrent use.
func (mgr *Manager) EmptyDirUsage(uid, name string) (bytes, inodes int64, err error) {
	root := mgr.emptyDirPath(uid, name)
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

// RemoveStaleStaging removes the staging mounts a tug that died while
// starting a container left (see Mounts): a staging mount is only
// needed while a task is being created, so any found now is a leftover.
func (mgr *Manager) RemoveStaleStaging() {
	dirs, _ := filepath.Glob(filepath.Join(mgr.cfg.RootDir, "pods", "*", "volume-subpaths", "*"))
	for _, d := range dirs {
		if err := Unstage(d); err != nil {
			mgr.log.Warn("remove leftover staging mounts", "file", d, "err", err)
		} else {
			mgr.log.Info("removed leftover staging mounts", "file", d)
		}
	}
}
