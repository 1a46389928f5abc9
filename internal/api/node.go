package api

import (
	"net/http"

	"tug/internal/pod"
	"tug/internal/podview"
)

// NodeSource supplies the node's name and conditions (the eviction
// manager's MemoryPressure, DiskPressure and PIDPressure).
type NodeSource interface {
	Node() podview.NodeView
}

func (s *Server) getNode(w http.ResponseWriter, _ *http.Request) {
	v := podview.NodeView{APIVersion: "v1", Kind: "Node", Status: pod.NodeStatus{Conditions: []pod.NodeCondition{}}}
	if s.Node != nil {
		v = s.Node.Node()
		v.APIVersion, v.Kind = "v1", "Node"
		if v.Status.Conditions == nil {
			v.Status.Conditions = []pod.NodeCondition{}
		}
	}
	s.writeJSON(w, http.StatusOK, v)
}
