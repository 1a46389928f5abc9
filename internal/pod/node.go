package pod

import "time"

// Node condition types, as in a Kubernetes Node's status.
const (
	NodeMemoryPressure = "MemoryPressure"
	NodeDiskPressure   = "DiskPressure"
	NodePIDPressure    = "PIDPressure"
)

// NodeCondition is one node condition, shaped like Kubernetes'.
type NodeCondition struct {
	Type               string    `json:"type"`
	Status             string    `json:"status"` // "True" or "False"
	Reason             string    `json:"reason"`
	Message            string    `json:"message"`
	LastTransitionTime time.Time `json:"lastTransitionTime"`
}

// NodeStatus is the node's observed state (GET /node).
type NodeStatus struct {
	// Capacity is how many units of each declared device resource the
	// node has now ("example.com/dongle": "3").
	Capacity map[string]string `json:"capacity,omitempty"`
	// Allocatable is what of Capacity pods may be given: all of it, as a
	// Kubernetes node's allocatable does not count what pods hold.
	Allocatable map[string]string `json:"allocatable,omitempty"`
	Conditions  []NodeCondition   `json:"conditions"`
}
