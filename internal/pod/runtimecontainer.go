package pod

import (
	"strings"
	"time"
)

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
	// Allocated are the container's resources as last applied to it (at
	// creation or by an in-place resize); nil for a container without
	// that label, which is recreated to be resized.
	Allocated *Resources
	Attempt   int // restart attempt, 0 for the first run
	Image     string
	ImageID   string
	// ImageVolumes are the image IDs of the image volumes the container
	// mounts: "volume=name@digest" pairs sorted by volume, joined by ","
	// (a string, so that the struct stays comparable); see ImageVolume.
	ImageVolumes string
	State        RunState
	PID          uint32
	ExitCode     int
	OOMKilled    bool
	CreatedAt    time.Time
	StartedAt    time.Time
	FinishedAt   time.Time
	// Message is what an exited container wrote to its
	// terminationMessagePath (at most 4096 bytes), for its terminated
	// state.
	Message string
}

// ImageVolume returns the image ID ("name@digest") of the image volume
// volume that the container mounts.
func (rc *RuntimeContainer) ImageVolume(volume string) (string, bool) {
	for _, pair := range strings.Split(rc.ImageVolumes, ",") {
		if v, id, ok := strings.Cut(pair, "="); ok && v == volume {
			return id, true
		}
	}
	return "", false
}
