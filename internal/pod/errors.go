package pod

import (
	"errors"
	"strconv"
	"strings"
)

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
	// ErrImagePullDeferred: the container's image does not fit on the
	// image filesystem above its eviction thresholds, even after the image
	// GC made room; the pull waits (ImagePullDeferred) and is tried again.
	ErrImagePullDeferred = errors.New("pod: image pull deferred: not enough disk space")
	// ErrImageNeverPull: the image is not present and imagePullPolicy is
	// Never (ErrImageNeverPull).
	ErrImageNeverPull = errors.New("pod: image not present and pull policy is Never")
	// ErrCreateContainerConfig: the container's configuration cannot be
	// honoured, e.g. runAsNonRoot with an image that runs as root
	// (CreateContainerConfigError).
	ErrCreateContainerConfig = errors.New("pod: invalid container configuration")
	// ErrImageDamaged: the container's image is present but its files or
	// content are damaged (an entrypoint that is missing, empty or
	// NUL-filled in the unpacked image, a blob that is gone or does not
	// verify), as a power cut leaves them. The image must be removed and
	// pulled or imported again.
	ErrImageDamaged = errors.New("pod: image damaged")
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
// ("file:line: msg"), the position for an error made by manifest.Validate on a pod
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

// ErrResizeBelowUsage is a memory limit decrease not applied in place
// because the container uses more than the new limit.
var ErrResizeBelowUsage = errors.New("pod: memory limit below usage")
