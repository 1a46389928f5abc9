package devices

import "errors"

// ErrBadResource is returned (wrapped) by ParseResource for a declaration
// that does not parse.
var ErrBadResource = errors.New("devices: bad device resource")

// ErrOutOfResource is wrapped by every *OutOfResource refusal.
var ErrOutOfResource = errors.New("devices: not enough devices")

// OutOfResource is admission's refusal of a pod that asks for more units
// of a resource than are free, with the kubelet's words: the pod's status
// is phase Failed, reason "OutOf<name>" (PodReason) and the message Error
// returns. It wraps ErrOutOfResource.
type OutOfResource struct {
	Name      string
	Requested int
	Used      int // units held by other pods
	Capacity  int // units present on the node
}

// Error is the kubelet's message: "Node didn't have enough resource:
// example.com/dongle, requested: 3, used: 0, capacity: 2".
func (e *OutOfResource) Error() string {
	return "Node didn't have enough resource: " + e.Name + ", requested: " + itoa(e.Requested) +
		", used: " + itoa(e.Used) + ", capacity: " + itoa(e.Capacity)
}

// PodReason is the pod's status reason: "OutOf" and the resource name.
func (e *OutOfResource) PodReason() string { return "OutOf" + e.Name }

// Unwrap returns ErrOutOfResource.
func (e *OutOfResource) Unwrap() error { return ErrOutOfResource }
