package eviction

import (
	"context"
	"path"

	"tug/internal/pod"
)

// PodCgroups reads a pod cgroup's usage (qos.Manager).
type PodCgroups interface {
	PodUsage(p *pod.Pod) (workingSet, pids int64, err error)
}

// Containers lists a pod's containers, every attempt (the PLEG's cache).
type Containers interface {
	PodContainers(uid string) []pod.RuntimeContainer
}

// Disks reads a container's disk usage, its writable layer and logs
// (podruntime.Runtime).
type Disks interface {
	ContainerDiskUsage(ctx context.Context, p *pod.Pod, c pod.RuntimeContainer) (bytes, inodes int64, err error)
}

// EmptyDirs reads a disk-backed emptyDir's usage (volume.Manager).
type EmptyDirs interface {
	EmptyDirUsage(uid, name string) (bytes, inodes int64, err error)
}

// StatsReader reads a pod's usage as the manager ranks it (the PodStats of
// Pods): the pod cgroup's memory working set and tasks, each disk-backed
// emptyDir's usage, and for each container's latest attempt its writable
// layer and logs and its memory working set. A container's disk usage
// (containerd walks its writable layer) is read only when it has an
// ephemeral-storage limit or while the node is under DiskPressure, when
// the ranking needs it: 30 containers walked every 10 s cost containerd
// about a core-percent. Likewise a running container's memory working set
// (its cgroup, for the message naming the container) is read only while
// the node is under MemoryPressure.
type StatsReader struct {
	Cgroups    PodCgroups
	Containers Containers
	Disks      Disks
	EmptyDirs  EmptyDirs
	// ContainerMemory reads the working set of a container cgroup (the
	// pod cgroup's path joined with the container ID); nil: per-container
	// memory is not read.
	ContainerMemory func(group string) (int64, error)
	// Pressure reports whether a node condition (MemoryPressure,
	// DiskPressure) is true now; nil: none is.
	Pressure func(condition string) bool
}

// PodStats reads p's usage; ok is false when nothing of it could be read.
func (r StatsReader) PodStats(ctx context.Context, p *pod.Pod) (PodStats, bool) {
	var st PodStats
	mem, pids, err := r.Cgroups.PodUsage(p)
	ok := err == nil
	st.Pod.Memory, st.Pod.PIDs = mem, pids
	latest := map[string]pod.RuntimeContainer{}
	for _, c := range r.Containers.PodContainers(p.Metadata.UID) {
		if l, seen := latest[c.Name]; !c.Init && (!seen || c.Attempt > l.Attempt) {
			latest[c.Name] = c
		}
	}
	under := func(condition string) bool { return r.Pressure != nil && r.Pressure(condition) }
	container := func(name string) Usage {
		if st.Containers == nil {
			st.Containers = map[string]Usage{}
		}
		return st.Containers[name]
	}
	if r.ContainerMemory != nil && under(MemoryPressure) {
		for name, c := range latest {
			if c.State != pod.RunRunning || c.CgroupParent == "" {
				continue
			}
			ws, err := r.ContainerMemory(path.Join(c.CgroupParent, c.ID))
			if err != nil {
				continue
			}
			u := container(name)
			u.Memory = ws
			st.Containers[name] = u
		}
	}
	diskPressure := under(DiskPressure)
	for name, c := range latest {
		if _, limited := appContainer(p, name).Resources.Limits[pod.ResourceEphemeralStorage]; !limited && !diskPressure {
			continue
		}
		b, inodes, err := r.Disks.ContainerDiskUsage(ctx, p, c)
		if err != nil {
			continue
		}
		u := container(name)
		u.Disk, u.Inodes = b, inodes
		st.Containers[name] = u
		st.Pod.Disk += b
		st.Pod.Inodes += inodes
		ok = true
	}
	for _, v := range p.Spec.Volumes {
		if v.EmptyDir == nil || v.EmptyDir.Medium == pod.StorageMediumMemory {
			continue
		}
		b, inodes, err := r.EmptyDirs.EmptyDirUsage(p.Metadata.UID, v.Name)
		if err != nil {
			continue
		}
		if st.EmptyDirs == nil {
			st.EmptyDirs = map[string]int64{}
		}
		st.EmptyDirs[v.Name] = b
		st.Pod.Disk += b
		st.Pod.Inodes += inodes
		ok = true
	}
	return st, ok
}

// appContainer returns p's app container name (zero if none).
func appContainer(p *pod.Pod, name string) pod.Container {
	for _, c := range p.Spec.Containers {
		if c.Name == name {
			return c
		}
	}
	return pod.Container{}
}
