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
