package pod

import "time"

// The observed-state types below mirror Kubernetes' PodStatus and
// ContainerStatus (k8s.io/api/core/v1) field for field, so that tools that
// read a kubelet's pods read tug's.

// Phase is a pod's phase.
type Phase string

const (
	PhasePending   Phase = "Pending"
	PhaseRunning   Phase = "Running"
	PhaseSucceeded Phase = "Succeeded"
	PhaseFailed    Phase = "Failed"
	PhaseUnknown   Phase = "Unknown"
)

// Condition types a pod reports.
const (
	ConditionInitialized     = "Initialized"
	ConditionContainersReady = "ContainersReady"
	ConditionReady           = "Ready"
	ConditionPodScheduled    = "PodScheduled" // always True: a static pod is on its node
	// ConditionPIDLimitReached is True while the kernel has refused a fork
	// or clone in the pod because the pod held its process limit
	// (--pod-max-pids, the pod cgroup's pids.max). The kubelet has no such
	// condition; tug reports it because a pod at its limit otherwise looks
	// Running while its processes fail with EAGAIN.
	ConditionPIDLimitReached = "PIDLimitReached"
	// ReasonPIDLimitReached is the status.reason (and the event reason)
	// of a pod at its process limit.
	ReasonPIDLimitReached = "PIDLimitReached"
	// ConditionUpdateReady is False while an update of the pod is
	// blocked: a container's new spec cannot be started (its image cannot
	// be pulled, say) and the container of its previous spec keeps
	// running. Its reason is the blocked container's waiting reason
	// (ErrImagePull, ImagePullBackOff, ...). The pod has no such condition
	// otherwise. The tug.io/ prefix keeps it apart from Kubernetes' own
	// condition types, as a readiness gate's would be.
	ConditionUpdateReady = "tug.io/UpdateReady"
	// ConditionDevicesReady is reported by a pod given devices (extended
	// resources backed by device nodes or CDI devices, CDI annotations):
	// True while every one is present, False (reason DeviceUnavailable,
	// the message naming each device and its resource) while one is gone,
	// a USB stick pulled out say. The containers that use a gone device
	// are not restarted until it is back.
	ConditionDevicesReady = "tug.io/DevicesReady"
	// ConditionPodResizePending is True while a resize of the pod's
	// containers cannot be applied: reason Infeasible (never on this
	// node, or not in place) or Deferred (once other pods free room).
	// ConditionPodResizeInProgress is True while one is being applied,
	// or failed to apply (reason Error) and is retried.
	ConditionPodResizePending    = "PodResizePending"
	ConditionPodResizeInProgress = "PodResizeInProgress"
	// ReasonTerminating is the reason of the Ready condition of a pod
	// being removed, while its containers are stopped.
	ReasonTerminating = "PodTerminating"
)

// Waiting reasons, as the kubelet reports them.
const (
	ReasonContainerCreating    = "ContainerCreating"
	ReasonPodInitializing      = "PodInitializing"
	ReasonCrashLoopBackOff     = "CrashLoopBackOff"
	ReasonErrImagePull         = "ErrImagePull"
	ReasonImagePullBackOff     = "ImagePullBackOff"
	ReasonImagePullDeferred    = "ImagePullDeferred" // tug's: the image does not fit on the image filesystem (ErrImagePullDeferred)
	ReasonErrImageNeverPull    = "ErrImageNeverPull"
	ReasonCreateContainerError = "CreateContainerError"
	// ReasonCreateContainerConfigError: the container's configuration
	// cannot be honoured (runAsNonRoot with an image running as root, a
	// Localhost seccomp profile that cannot be loaded); see
	// ErrCreateContainerConfig.
	ReasonCreateContainerConfigError = "CreateContainerConfigError"
	// ReasonBlocked: the admission policy refused the pod (or the pod's
	// update); it is also the pod's status.reason, with the violations as
	// its message.
	ReasonBlocked = "Blocked"
	// ReasonRolledBack: the pod's newest spec failed its rollout and the
	// pod runs its last good spec.
	ReasonRolledBack = "RolledBack"
)

// Reasons of a pod that tug does not run, or no longer wants (status.reason;
// the waiting reason of its containers that have not started).
const (
	// ReasonHostPortInUse: another pod or a program on the node has one of
	// the pod's hostPorts.
	ReasonHostPortInUse = "HostPortInUse"
	// ReasonOutOfPods: the node runs --max-pods pods already (the kubelet's
	// admission reason).
	ReasonOutOfPods = "OutOfpods"
	// ReasonOrphaned: the pod's source is no longer configured; tug removes
	// the pod once the configured sources have reported.
	ReasonOrphaned = "Orphaned"
)

// The condition of a pod that runs a cached image because no registry
// could be reached.
const (
	// ConditionImageFromCache is True while a container of the pod (or an
	// image volume) runs the image of its reference that is in the store
	// because its imagePullPolicy Always pull could reach no registry host
	// (--image-pull-offline=use-cached), reason PullOfflineUsingCache, the
	// message naming each image and the pull's error. The pod has no such
	// condition once a pull of the image succeeds. The kubelet fails such a
	// pull (ErrImagePull); a device that is offline keeps running what it
	// has.
	ConditionImageFromCache     = "tug.io/ImageFromCache"
	ReasonPullOfflineUsingCache = "PullOfflineUsingCache"
)

// Terminated reasons.
const (
	ReasonCompleted = "Completed"
	ReasonError     = "Error"
	ReasonOOMKilled = "OOMKilled"
)

// Status is a pod's observed state.
type Status struct {
	Phase                 Phase             `json:"phase"`
	Conditions            []Condition       `json:"conditions,omitempty"`
	Message               string            `json:"message,omitempty"`
	Reason                string            `json:"reason,omitempty"`
	HostIP                string            `json:"hostIP,omitempty"`
	PodIP                 string            `json:"podIP,omitempty"`
	PodIPs                []PodIP           `json:"podIPs,omitempty"`
	StartTime             *time.Time        `json:"startTime,omitempty"`
	QOSClass              string            `json:"qosClass,omitempty"` // Guaranteed, Burstable or BestEffort
	InitContainerStatuses []ContainerStatus `json:"initContainerStatuses,omitempty"`
	ContainerStatuses     []ContainerStatus `json:"containerStatuses,omitempty"`
}

// PodIP is one of a pod's addresses.
type PodIP struct {
	IP string `json:"ip"`
}

// Condition is one pod condition; Status is "True" or "False".
type Condition struct {
	Type               string    `json:"type"`
	Status             string    `json:"status"`
	LastTransitionTime time.Time `json:"lastTransitionTime"`
	Reason             string    `json:"reason,omitempty"`
	Message            string    `json:"message,omitempty"`
}

// ContainerStatus is one container's observed state.
type ContainerStatus struct {
	Name                 string         `json:"name"`
	State                ContainerState `json:"state"`
	LastTerminationState ContainerState `json:"lastState"`
	Ready                bool           `json:"ready"`
	RestartCount         int32          `json:"restartCount"`
	Image                string         `json:"image"`
	ImageID              string         `json:"imageID"`
	ContainerID          string         `json:"containerID,omitempty"`
	Started              *bool          `json:"started,omitempty"`
	// VolumeMounts are the container's mounts of image volumes, each
	// naming the image it mounts by digest (Kubernetes reports every
	// mount here; tug reports those whose source it resolved).
	VolumeMounts []VolumeMountStatus `json:"volumeMounts,omitempty"`
	// AllocatedResources are the requests the node gave the container,
	// and Resources its requests and limits as applied to it: they differ
	// from the spec's while a resize waits (KEP-1287).
	AllocatedResources ResourceList `json:"allocatedResources,omitempty"`
	Resources          *Resources   `json:"resources,omitempty"`
}

// VolumeMountStatus is one volume mount of a running container.
type VolumeMountStatus struct {
	Name      string             `json:"name"`
	MountPath string             `json:"mountPath"`
	ReadOnly  bool               `json:"readOnly,omitempty"`
	Image     *ImageVolumeStatus `json:"image,omitempty"`
}

// ImageVolumeStatus is the image an image volume mounts.
type ImageVolumeStatus struct {
	// ImageRef is the image's name and digest ("name@sha256:...").
	ImageRef string `json:"imageRef"`
}

// ContainerState holds exactly one of its fields (none for "no state").
type ContainerState struct {
	Waiting    *StateWaiting    `json:"waiting,omitempty"`
	Running    *StateRunning    `json:"running,omitempty"`
	Terminated *StateTerminated `json:"terminated,omitempty"`
}

// StateWaiting is a container not running yet, with the reason why.
type StateWaiting struct {
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// StateRunning is a running container.
type StateRunning struct {
	StartedAt time.Time `json:"startedAt"`
}

// StateTerminated is a container that exited.
type StateTerminated struct {
	ExitCode    int32     `json:"exitCode"`
	Signal      int32     `json:"signal,omitempty"`
	Reason      string    `json:"reason,omitempty"`
	Message     string    `json:"message,omitempty"`
	StartedAt   time.Time `json:"startedAt"`
	FinishedAt  time.Time `json:"finishedAt"`
	ContainerID string    `json:"containerID,omitempty"`
}
