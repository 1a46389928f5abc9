package devices

import (
	"errors"
	"strings"
)

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
	Used      int // units held by other pods, or the same devices as theirs
	Capacity  int // units present on the node
	// Conflicts are the units of Name counted in Used because another pod
	// holds the same device through another path or resource.
	Conflicts []Conflict
}

// Conflict is a unit of a resource that is another pod's device under
// another name: the same device node reached by two globs (a symlink and
// the node itself), or by two resources.
type Conflict struct {
	Unit     string // the unit of the refused resource: "/dev/serial/by-id/usb-X"
	Device   string // the device both name: "char device 188:0"
	Pod      string // the pod that holds it, namespace/name ("with UID ..." when tug does not know its name)
	HeldAs   string // the unit that pod holds: "/dev/ttyUSB0"
	Resource string // the resource it holds it as: "tug.io/tty"
}

// Error is the kubelet's message: "Node didn't have enough resource:
// example.com/dongle, requested: 3, used: 0, capacity: 2", followed, for
// each conflict, by the pod that holds the device under another name:
// "; /dev/serial/by-id/usb-X is char device 188:0, held by pod
// default/modem-node1 as /dev/ttyUSB0 of tug.io/tty".
func (e *OutOfResource) Error() string {
	var b strings.Builder
	b.WriteString("Node didn't have enough resource: " + e.Name + ", requested: " + itoa(e.Requested) +
		", used: " + itoa(e.Used) + ", capacity: " + itoa(e.Capacity))
	for _, c := range e.Conflicts {
		b.WriteString("; " + c.Unit + " is " + c.Device + ", held by pod " + c.Pod + " as " + c.HeldAs + " of " + c.Resource)
	}
	return b.String()
}

// PodReason is the pod's status reason: "OutOf" and the resource name.
func (e *OutOfResource) PodReason() string { return "OutOf" + e.Name }

// Unwrap returns ErrOutOfResource.
func (e *OutOfResource) Unwrap() error { return ErrOutOfResource }
