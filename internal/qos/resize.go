package qos

import (
	"fmt"
	"path"
	"path/filepath"

	"tug/internal/pod"
)

// The reasons of a resize that cannot be applied (the PodResizePending
// condition's, as Kubernetes names them).
const (
	// ResizeInfeasible: the resize can never be applied on this node.
	ResizeInfeasible = "Infeasible"
	// ResizeDeferred: it can once other pods free room.
	ResizeDeferred = "Deferred"
)

// ResizeFits says whether p, a pod already ensured with its allocated
// resources, fits the node with the requests of its resized spec: "" when
// it does; ResizeInfeasible when a cpu or memory request of the pod alone
// exceeds node allocatable; ResizeDeferred when it fits the node but not
// beside the other pods' requests (as the kubelet's resize admission).
// msg says which resource. Safe for concurrent use.
func (m *Manager) ResizeFits(p *pod.Pod) (reason, msg string) {
	want := resourcesOf(p)
	m.mu.Lock()
	defer m.mu.Unlock()
	var cpu, mem int64
	for uid, st := range m.pods {
		if uid != p.Metadata.UID {
			cpu = addSat(cpu, st.res.cpuRequest)
			mem = addSat(mem, st.res.memRequest)
		}
	}
	switch {
	case want.cpuRequest > m.allocCPU:
		return ResizeInfeasible, fmt.Sprintf("Node didn't have enough capacity: cpu, requested: %d, capacity: %d", want.cpuRequest, m.allocCPU)
	case want.memRequest > m.allocMem:
		return ResizeInfeasible, fmt.Sprintf("Node didn't have enough capacity: memory, requested: %d, capacity: %d", want.memRequest, m.allocMem)
	case addSat(cpu, want.cpuRequest) > m.allocCPU:
		return ResizeDeferred, fmt.Sprintf("Node didn't have enough resource: cpu, requested: %d, used: %d, capacity: %d", want.cpuRequest, cpu, m.allocCPU)
	case addSat(mem, want.memRequest) > m.allocMem:
		return ResizeDeferred, fmt.Sprintf("Node didn't have enough resource: memory, requested: %d, used: %d, capacity: %d", want.memRequest, mem, m.allocMem)
	}
	return "", ""
}

// ContainerMemoryUsage returns the memory usage in bytes of the container
// whose cgroup is parent/id (parent: its pod cgroup, as EnsurePod
// returned it). Safe for concurrent use.
func (m *Manager) ContainerMemoryUsage(parent, id string) (int64, error) {
	if err := checkUID(id); err != nil {
		return 0, err
	}
	name := "memory.usage_in_bytes"
	if m.lay.version == 2 {
		name = "memory.current"
	}
	dir := path.Clean("/" + parent + "/" + id)
	v, err := readInt(filepath.Join(m.ctrl["memory"], dir, name))
	if err != nil {
		return 0, fmt.Errorf("memory usage of container %s: %w", id, err)
	}
	return v, nil
}
