package volume

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/containerd/containerd/v2/core/mount"
	"golang.org/x/sys/unix"
)

// ErrImageSubPathMissing means a volumeMount's subPath names a path that
// the image of its image volume does not have: an image volume is
// read-only, so the path is not created as it is in other volumes.
var ErrImageSubPathMissing = errors.New("volume: subPath does not exist in the image volume")

// imageVolumePath is RootDir/pods/<uid>/volumes/image/<volume>, where the
// view of an image volume's snapshot is mounted.
func (mgr *Manager) imageVolumePath(uid, volume string) string {
	return filepath.Join(mgr.podDir(uid), "volumes", "image", volume)
}

// imageVolumeMounted reports whether the image volume name of pod uid is
// mounted at its directory (by this tug, or by one that ran before it).
func (mgr *Manager) imageVolumeMounted(uid, name string) (bool, error) {
	if err := checkNames(uid, name); err != nil {
		return false, err
	}
	ok, err := isMountPoint(mgr.imageVolumePath(uid, name))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return ok, err
}

// mountImageVolume mounts mounts (the mounts of a read-only snapshot view:
// an overlay of the image's layers, or a bind of its one layer) at the
// image volume name of pod uid, read-only. The containers bind that
// directory.
func (mgr *Manager) mountImageVolume(uid, name string, mounts []mount.Mount) error {
	if err := checkNames(uid, name); err != nil {
		return err
	}
	dir := mgr.imageVolumePath(uid, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("image volume %q: %w", name, err)
	}
	if err := mount.All(mounts, dir); err != nil {
		return fmt.Errorf("image volume %q: mount: %w", name, err)
	}
	// A bind of a single layer is read-only only once remounted so.
	if err := unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		_ = unix.Unmount(dir, unix.MNT_DETACH)
		return fmt.Errorf("image volume %q: remount read-only: %w", name, err)
	}
	return nil
}

// unmountImageVolume unmounts the image volume name of pod uid (the
// containers that bound it keep their own mounts). Not mounted is not an
// error.
func (mgr *Manager) unmountImageVolume(uid, name string) error {
	if err := checkNames(uid, name); err != nil {
		return err
	}
	if err := mount.UnmountAll(mgr.imageVolumePath(uid, name), unix.MNT_DETACH); err != nil {
		return fmt.Errorf("image volume %q: unmount: %w", name, err)
	}
	return nil
}

// checkNames checks a pod uid and a volume name as path components.
func checkNames(uid, name string) error {
	if err := CheckName("pod uid", uid); err != nil {
		return err
	}
	return CheckName("volume name", name)
}
