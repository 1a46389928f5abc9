package api

import (
	"testing"

	"tug/internal/pod"
	"tug/internal/podview"
)

func TestStateMetrics(t *testing.T) {
	status := testStatus()
	// web's app container crash-loops after 4 restarts; its init
	// container ran once; twin (two pods of one name, from two sources)
	// keeps one series per UID.
	status.pods[0].Status.InitContainerStatuses = []pod.ContainerStatus{{Name: "setup", RestartCount: 1,
		State: pod.ContainerState{Terminated: &pod.StateTerminated{Reason: "Completed"}}}}
	status.pods[0].Status.ContainerStatuses = []pod.ContainerStatus{
		{Name: "app", RestartCount: 4, State: pod.ContainerState{Waiting: &pod.StateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s"}}},
		{Name: "side", State: pod.ContainerState{Running: &pod.StateRunning{}}},
	}
	status.pods[3].Status.ContainerStatuses = []pod.ContainerStatus{{Name: "main", RestartCount: 2}}
	status.pods[4].Status.ContainerStatuses = []pod.ContainerStatus{{Name: "main", RestartCount: 7}}
	node := fakeNode{podview.NodeView{Metadata: podview.NodeMeta{Name: "edge1"}, Status: pod.NodeStatus{Conditions: []pod.NodeCondition{
		{Type: pod.NodeMemoryPressure, Status: "True"},
		{Type: pod.NodeDiskPressure, Status: "False"},
		{Type: pod.NodePIDPressure, Status: ""},
	}}}}
	mf := parseMetrics(t, serve(t, (&Server{Status: status, Node: node}).Handler(), "/metrics").Body.String())
	tests := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"kube_pod_container_status_restarts_total", map[string]string{"namespace": "default", "pod": "web-edge1", "uid": "uid-web", "container": "app"}, 4},
		{"kube_pod_container_status_restarts_total", map[string]string{"pod": "web-edge1", "container": "side"}, 0},
		{"kube_pod_container_status_restarts_total", map[string]string{"pod": "twin-edge1", "uid": "uid-a"}, 2},
		{"kube_pod_container_status_restarts_total", map[string]string{"pod": "twin-edge1", "uid": "uid-b"}, 7},
		{"kube_pod_init_container_status_restarts_total", map[string]string{"pod": "web-edge1", "container": "setup"}, 1},
		{"kube_pod_container_status_waiting_reason", map[string]string{"pod": "web-edge1", "container": "app", "reason": "CrashLoopBackOff"}, 1},
		{"kube_node_status_condition", map[string]string{"node": "edge1", "condition": "MemoryPressure", "status": "true"}, 1},
		{"kube_node_status_condition", map[string]string{"condition": "MemoryPressure", "status": "false"}, 0},
		{"kube_node_status_condition", map[string]string{"condition": "MemoryPressure", "status": "unknown"}, 0},
		{"kube_node_status_condition", map[string]string{"condition": "DiskPressure", "status": "false"}, 1},
		{"kube_node_status_condition", map[string]string{"condition": "DiskPressure", "status": "true"}, 0},
		{"kube_node_status_condition", map[string]string{"condition": "PIDPressure", "status": "unknown"}, 1},
	}
	for _, tt := range tests {
		got, ok := metricValue(mf, tt.name, tt.labels)
		if !ok || got != tt.want {
			t.Errorf("%s%v = %v (found %v), want %v", tt.name, tt.labels, got, ok, tt.want)
		}
	}
	// Only a waiting container has a waiting reason, and each condition
	// has its three series.
	if n := len(mf["kube_pod_container_status_waiting_reason"].GetMetric()); n != 1 {
		t.Errorf("%d waiting reason series, want 1 (app's)", n)
	}
	if n := len(mf["kube_node_status_condition"].GetMetric()); n != 9 {
		t.Errorf("%d condition series, want 9", n)
	}
}

func TestStateMetricsNoNode(t *testing.T) {
	mf := parseMetrics(t, serve(t, (&Server{}).Handler(), "/metrics").Body.String())
	if f := mf["kube_node_status_condition"]; f != nil {
		t.Errorf("a server with no NodeSource reports conditions: %v", f)
	}
}
