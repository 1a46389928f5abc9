package podruntime

import (
	"context"
	"fmt"
	"os"
	"syscall"

	"tug/internal/pod"
	"tug/internal/podlogs"
)

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
