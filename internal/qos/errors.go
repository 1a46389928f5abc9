package qos

import "errors"

var (
	// ErrNoCgroups: no cgroup v2 mount at Config.Mount and no cgroup v1
	// hierarchy below it.
	ErrNoCgroups = errors.New("qos: no cgroup filesystem found")
	// ErrMissingController: a controller tug needs (cpu, memory; pids when
	// a pod pids limit is set) is not available.
	ErrMissingController = errors.New("qos: cgroup controller not available")
	// ErrInvalidConfig: a Config value is out of range (a root path that
	// leaves the hierarchy, a reservation larger than the node, an OOM
	// score floor outside [-1000, 1000]).
	ErrInvalidConfig = errors.New("qos: invalid configuration")
	// ErrInvalidUID: a pod UID that cannot name a cgroup directory.
	ErrInvalidUID = errors.New("qos: invalid pod UID")
	// ErrBusy: a cgroup could not be removed because processes are still
	// in it; stop the pod's containers first and retry.
	ErrBusy = errors.New("qos: cgroup still has processes")
)
