package pod

import "errors"

// ErrInvalidQuantity is returned (wrapped) by ParseQuantity and
// Quantity.UnmarshalJSON for text that is not a Kubernetes quantity or whose
// value does not fit in int64 thousandths.
var ErrInvalidQuantity = errors.New("pod: invalid quantity")

// Error classes a container runtime wraps so that the sync loop can report
// a waiting container the way Kubernetes does, without knowing the runtime.
var (
	// ErrImagePull: pulling the container's image failed (ErrImagePull, then
	// ImagePullBackOff while retrying).
	ErrImagePull = errors.New("pod: image pull failed")
	// ErrImageNeverPull: the image is not present and imagePullPolicy is
	// Never (ErrImageNeverPull).
	ErrImageNeverPull = errors.New("pod: image not present and pull policy is Never")
	// ErrCreateContainerConfig: the container's configuration cannot be
	// honoured, e.g. runAsNonRoot with an image that runs as root
	// (CreateContainerConfigError).
	ErrCreateContainerConfig = errors.New("pod: invalid container configuration")
)

// HostPortInUseError is returned (wrapped) by a pod network that cannot
// hold one of the pod's hostPorts because another pod or a program on the
// node has it. The pod is not started (or, after a tug restart, its
// hostPort is not forwarded) until the port is free. Find it with
// errors.As.
type HostPortInUseError struct {
	Port string // "hostPort 8088/TCP", with " on <hostIP>" when it has one
	By   string // who holds it, when known ("another pod")
	Err  error  // the bind error, if any
}

func (e *HostPortInUseError) Error() string {
	if e.By != "" {
		return e.Port + " is in use by " + e.By
	}
	return e.Port + " is in use"
}

func (e *HostPortInUseError) Unwrap() error { return e.Err }
