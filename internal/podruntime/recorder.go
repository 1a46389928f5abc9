package podruntime

import "tug/internal/pod"

// eventRecorder receives Kubernetes-shaped events about pods (implemented
// by events.Ring).
type eventRecorder interface {
	Event(p *pod.Pod, container, eventType, reason, message string)
}

// event records an event when the runtime has a recorder.
func (r *Runtime) event(p *pod.Pod, container, eventType, reason, message string) {
	if r.cfg.Recorder != nil {
		r.cfg.Recorder.Event(p, container, eventType, reason, message)
	}
}
