package podruntime

import (
	"tug/internal/pod"
	"tug/internal/podlogs"
)

// terminationMessage returns the termination message of exited container
// rc: what it wrote, or the tail of its log when it failed under
// FallbackToLogsOnError.
func (r *Runtime) terminationMessage(rc *pod.RuntimeContainer) string {
	msg, fallback := r.volumes.TerminationMessage(rc)
	if fallback != "" {
		return podlogs.Tail(fallback)
	}
	return msg
}
