package podruntime

import (
	"errors"
)

var (
	// ErrShimGrouping means Config.ShimGrouping is neither "pod" nor
	// "node".
	ErrShimGrouping = errors.New("podruntime: unknown shim grouping")
	// ErrContainerIDTaken means a container already exists under the ID a
	// new one needs, and its labels say it belongs to another pod or
	// container (or to no pod of tug's): it is left alone.
	ErrContainerIDTaken = errors.New("podruntime: container ID taken by another container")
	// ErrContainerNotFound means there is no container with the given ID.
	ErrContainerNotFound = errors.New("podruntime: container not found")
	// ErrNoTask means a container has no task to wait for: it was never
	// started.
	ErrNoTask = errors.New("podruntime: container has no task")
	// ErrRuntimeClass means a --runtime-class value is malformed, or
	// names a binary that is not there.
	ErrRuntimeClass = errors.New("podruntime: bad runtime class")
	// ErrRuntimeClassNotDeclared means a pod's runtimeClassName is not
	// one of Config.RuntimeClasses (node admission refuses such a pod
	// first).
	ErrRuntimeClassNotDeclared = errors.New("podruntime: runtime class not declared on this node")
)
