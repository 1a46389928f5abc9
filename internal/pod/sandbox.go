package pod

// What the sync loop hands to the runtime adapters to start a pod's
// containers: the shared sandbox and each container's cgroup values.

// Namespaces are the paths of a pod's pinned namespaces, as bind mounts the
// containers join by path. An empty path means the host's namespace.
type Namespaces struct {
	Net string
	IPC string
	UTS string
}

// Sandbox is what a pod's containers share, set up before the first of
// them starts: the pinned namespaces, the pod's cgroup and its address.
type Sandbox struct {
	Namespaces
	// CgroupParent is the pod's cgroup, as a path from the root of the
	// cgroup hierarchy ("/tugpods/burstable/pod<uid>"). Each container's
	// cgroup goes below it. Empty: the runtime's default place.
	CgroupParent string
	// IP is the pod's address on the pod network; for a hostNetwork pod,
	// the node's address (as in Kubernetes). Empty when unknown.
	IP string
	// HostIP is the node's address (the downward API's status.hostIP).
	HostIP string
	// UserNS is the ID mapping of a pod in a user namespace of its own
	// (hostUsers: false); nil for a pod in the node's user namespace.
	UserNS *IDMapping
}

// IDMapping is a pod's user namespace: container IDs 0 to Size-1 are host
// IDs HostID to HostID+Size-1, for UIDs and GIDs alike.
type IDMapping struct {
	HostID uint32
	Size   uint32
}

// Host returns the host ID of container ID id (a UID or a GID).
func (m IDMapping) Host(id int64) int64 { return int64(m.HostID) + id }

// UserNamespace reports whether the pod runs in a user namespace of its
// own (spec.hostUsers: false).
func (p *Pod) UserNamespace() bool {
	return p.Spec.HostUsers != nil && !*p.Spec.HostUsers
}

// LinuxResources are one container's cgroup values and OOM score, computed
// from its manifest by qos and written into its OCI spec by podruntime.
// A zero value means "not set": no limit, the runtime's default.
type LinuxResources struct {
	CPUShares   uint64 // cpu.shares (v1); runc converts it to cpu.weight on v2
	CPUQuota    int64  // microseconds of CPU time per CPUPeriod; 0: no limit
	CPUPeriod   uint64 // microseconds; set together with CPUQuota
	MemoryLimit int64  // bytes (memory.max, v1 memory.limit_in_bytes); 0: no limit
	// Unified holds cgroup v2 files the fields above do not cover
	// (memory.min and memory.high under --memory-qos); nil on v1.
	Unified map[string]string
	// OOMScoreAdj is the container's oom_score_adj; nil leaves the
	// runtime's default.
	OOMScoreAdj *int
}
