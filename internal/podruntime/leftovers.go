package podruntime

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"tug/internal/volume"
)

// PodDirUIDs returns the UIDs that have a pod directory under
// <root-dir>/pods, a log directory (<namespace>_<pod>_<uid>) under
// --pod-logs-dir or an image volume view, sorted: what a pod leaves on
// disk. Housekeeping removes
// those of pods that are gone even when nothing else of them is left (no
// container, namespace or cgroup). A directory that is missing lists
// nothing.
func (r *Runtime) PodDirUIDs() ([]string, error) {
	set := map[string]bool{}
	var errs []error
	pods, err := os.ReadDir(filepath.Join(r.cfg.RootDir, "pods"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, fmt.Errorf("list pod directories: %w", err))
	}
	for _, e := range pods {
		if e.IsDir() && volume.CheckName("pod uid", e.Name()) == nil {
			set[e.Name()] = true
		}
	}
	logs, err := os.ReadDir(r.cfg.LogsDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, fmt.Errorf("list pod log directories: %w", err))
	}
	for _, e := range logs {
		if uid, ok := logDirUID(e.Name()); ok && e.IsDir() {
			set[uid] = true
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	views, err := r.volumes.ImageViewUIDs(r.ctx(ctx))
	if err != nil {
		errs = append(errs, err)
	}
	for _, uid := range views {
		set[uid] = true
	}
	return slices.Sorted(maps.Keys(set)), errors.Join(errs...)
}

// logDirUID returns the UID of a pod log directory's name,
// <namespace>_<pod>_<uid> (none of which has a "_").
func logDirUID(name string) (string, bool) {
	parts := strings.Split(name, "_")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || volume.CheckName("pod uid", parts[2]) != nil {
		return "", false
	}
	return parts[2], true
}

// RemovePodDirs removes the pod directory of uid (its volumes unmounted
// first) and every log directory of uid, as CleanupPod does for a pod it
// knows; housekeeping calls it for a pod that is gone and whose name it no
// longer has. Nothing to remove is not an error.
func (r *Runtime) RemovePodDirs(uid string) error {
	if err := volume.CheckName("pod uid", uid); err != nil {
		return err
	}
	if r.images != nil {
		r.images.ForgetPod(uid)
	}
	// A shareProcessNamespace pod's PID holder is not a pod container:
	// nothing else would find it once the pod is gone.
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if err := r.removeHolder(r.ctx(ctx), uid); err != nil {
		return fmt.Errorf("remove PID namespace holder of pod %s: %w", uid, err)
	}
	if err := r.volumes.Remove(uid); err != nil {
		return err
	}
	if err := r.volumes.RemoveImageViews(r.ctx(ctx), uid); err != nil {
		return err
	}
	if r.cfg.Devices != nil {
		if err := r.cfg.Devices.Release(uid); err != nil {
			return err
		}
	}
	if r.cfg.UserNamespaces != nil {
		if err := r.cfg.UserNamespaces.Release(uid); err != nil {
			return err
		}
	}
	entries, err := os.ReadDir(r.cfg.LogsDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove log directories of pod %s: %w", uid, err)
	}
	for _, e := range entries {
		if u, ok := logDirUID(e.Name()); ok && u == uid && e.IsDir() {
			if err := os.RemoveAll(filepath.Join(r.cfg.LogsDir, e.Name())); err != nil {
				return fmt.Errorf("remove log directories of pod %s: %w", uid, err)
			}
		}
	}
	return nil
}
