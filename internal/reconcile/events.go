package reconcile

import "tug/internal/pod"

// eventRecorder receives Kubernetes-shaped events about pods (implemented
// by events.Ring). eventType is "Normal" or "Warning"; container is "" for
// an event about the pod itself.
type eventRecorder interface {
	Event(p *pod.Pod, container, eventType, reason, message string)
}

// Event types and the reasons the sync loop reports, as the kubelet names
// them.
const (
	eventNormal  = "Normal"
	eventWarning = "Warning"

	reasonCreated                = "Created"
	reasonStarted                = "Started"
	reasonKilling                = "Killing"
	reasonBackOff                = "BackOff"
	reasonFailed                 = "Failed"
	reasonFailedMount            = "FailedMount"
	reasonFailedCreatePodSandBox = "FailedCreatePodSandBox"
	// reasonUpdateBlocked (tug's own): a container's new spec cannot
	// start and the container of its previous spec keeps running.
	reasonUpdateBlocked = "UpdateBlocked"
)

// event records an event when the syncer has a recorder.
func (s *podSyncer) event(p *pod.Pod, container, eventType, reason, message string) {
	if s.rec != nil {
		s.rec.Event(p, container, eventType, reason, message)
	}
}
