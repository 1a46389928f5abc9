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

// NodeView is the node as GET /node shows it: a Kubernetes-shaped Node
// named by the host name, with the conditions tug computes.
type NodeView struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   NodeMeta   `json:"metadata"`
	Status     NodeStatus `json:"status"`
}

// NodeMeta names the node.
type NodeMeta struct {
	Name string `json:"name"`
}
