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
)

// Waiting reasons, as the kubelet reports them.
const (
	ReasonContainerCreating    = "ContainerCreating"
	ReasonPodInitializing      = "PodInitializing"
	ReasonCrashLoopBackOff     = "CrashLoopBackOff"
	ReasonErrImagePull         = "ErrImagePull"
	ReasonImagePullBackOff     = "ImagePullBackOff"
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

// View is a pod as the API shows it: its manifest and its observed status,
// shaped like a Kubernetes Pod object.
type View struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   ObjectMeta `json:"metadata"`
	Spec       PodSpec    `json:"spec"`
	Status     Status     `json:"status"`
}

// List is a Kubernetes-shaped PodList.
type List struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Items      []View `json:"items"`
}

// ManifestStatus is the state of one manifest file (or URL) of a source:
// what the API's /manifests reports.
type ManifestStatus struct {
	Source      string    `json:"source"`
	File        string    `json:"file"`
	Error       string    `json:"error,omitempty"` // "" when the file is good
	UIDs        []string  `json:"uids,omitempty"`  // pods of this file that are applied
	AppliedHash string    `json:"appliedHash,omitempty"`
	Hash        string    `json:"hash,omitempty"` // content last seen
	LastChange  time.Time `json:"lastChange"`
	// Fetch is the state of a URL source's polling (nil for files).
	Fetch *FetchStatus `json:"fetch,omitempty"`
}

// FetchStatus is what an HTTP manifest source last saw of its URL.
type FetchStatus struct {
	LastFetch      time.Time `json:"lastFetch"`                // when the last request ended
	LastSuccess    time.Time `json:"lastSuccess,omitempty"`    // last 200 or 304
	HTTPStatus     int       `json:"httpStatus,omitempty"`     // of the last response (0: none)
	Error          string    `json:"error,omitempty"`          // of the last request, "" when it worked
	ETag           string    `json:"etag,omitempty"`           // of the accepted content
	LastModified   string    `json:"lastModified,omitempty"`   // of the accepted content
	FullResponses  int64     `json:"fullResponses"`            // 200s received since start
	NotModified    int64     `json:"notModified"`              // 304s received since start
	CheckpointTime time.Time `json:"checkpointTime,omitempty"` // when the accepted content was fetched (as checkpointed)
	FromCheckpoint bool      `json:"fromCheckpoint,omitempty"` // the pods come from the checkpoint, nothing fetched yet
}
