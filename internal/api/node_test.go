package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"tug/internal/pod"
	"tug/internal/podview"
)

type fakeNode struct{ v podview.NodeView }

func (f fakeNode) Node() podview.NodeView { return f.v }

func TestGetNode(t *testing.T) {
	cond := pod.NodeCondition{Type: pod.NodeMemoryPressure, Status: "True", Reason: "KubeletHasInsufficientMemory", Message: "kubelet has insufficient memory available"}
	tests := []struct {
		name      string
		node      NodeSource
		wantName  string
		wantConds int
	}{
		{"no source", nil, "", 0},
		{"conditions", fakeNode{podview.NodeView{Metadata: podview.NodeMeta{Name: "dev1"}, Status: pod.NodeStatus{Conditions: []pod.NodeCondition{cond}}}}, "dev1", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			(&Server{Node: tt.node}).Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/node", nil))
			if rec.Code != http.StatusOK {
				t.Fatalf("GET /node = %d %s", rec.Code, rec.Body)
			}
			var v podview.NodeView
			if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
				t.Fatal(err)
			}
			if v.Kind != "Node" || v.APIVersion != "v1" || v.Metadata.Name != tt.wantName || len(v.Status.Conditions) != tt.wantConds {
				t.Errorf("GET /node = %+v", v)
			}
		})
	}
}
