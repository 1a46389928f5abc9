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
