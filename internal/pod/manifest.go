package pod

import (
	"strconv"
	"strings"
	"time"
)

// FieldError is one problem in a manifest, positioned in its file. It prints
// as "file:line:col: path: msg", e.g.
// "manifests/web.yaml:12:7: spec.containers[0].image: required".
type FieldError struct {
	File string // Origin.File of the manifest
	Line int    // 1-based line; 0 when unknown
	Col  int    // 1-based column; 0 when unknown
	Path string // field path, e.g. "spec.containers[0].image"; "" for a document-level error
	Msg  string
}

// Error formats the problem as "file:line:col: path: msg". Parts that are
// unknown are left out: the column when the YAML parser gives only a line
// ("file:line: msg"), the position for an error made by Validate on a pod
// built in code ("path: msg").
func (e *FieldError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		if e.File != "" {
			b.WriteByte(':')
		}
		b.WriteString(strconv.Itoa(e.Line))
		if e.Col > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(e.Col))
		}
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	if e.Path != "" {
		b.WriteString(truncateTo(e.Path, 2*MaxEcho)) // map keys come from the manifest
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Origin says where a manifest came from. Source names the source as a whole
// ("file:/etc/tug/manifests" or "http://host/pods.yaml"); File names the one
// document set inside it (a path, or the URL again).
type Origin struct {
	Source string
	File   string
}

// Manifest is what a source read from one file (or URL): the pods it
// defines, or the error that kept it from being read. A source reports every
// file it sees, broken ones included, so that the store can keep the last
// good version of a broken file's pods.
type Manifest struct {
	Origin
	Pods    []*Pod    // decoded, defaulted, validated and named; nil when Err != nil
	Err     error     // read or parse error; joined *FieldError values for bad content
	Hash    string    // sha256 hex of the raw bytes ("" when unreadable)
	ModTime time.Time // modification time of the file, zero for URLs
}

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

// RunState is a container's state as the runtime sees it.
type RunState string

const (
	RunCreated RunState = "created" // container exists, task not started
	RunRunning RunState = "running"
	RunExited  RunState = "exited"
	RunUnknown RunState = "unknown"
)

// RuntimeContainer is one of tug's containers as found in containerd by its
// labels: the observed state the sync loop compares with the manifest.
type RuntimeContainer struct {
	ID        string // containerd container ID
	PodUID    string
	PodName   string
	Namespace string
	PodSource string        // the source the pod came from (Origin.Source)
	PodGrace  time.Duration // the pod's termination grace period
	Name      string        // container name in the manifest
	Init      bool          // an init container
	SpecHash  string        // ContainerHash at creation
	// CgroupParent is the pod cgroup the container was created in ("" for
	// containers made before tug labelled it).
	CgroupParent string
	Attempt      int // restart attempt, 0 for the first run
	Image        string
	ImageID      string
	State        RunState
	PID          uint32
	ExitCode     int
	OOMKilled    bool
	CreatedAt    time.Time
	StartedAt    time.Time
	FinishedAt   time.Time
}
