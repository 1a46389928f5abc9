package main

import (
	"testing"
	"time"

	"tug/internal/pod"
)

// TestSettledPod: a pod counts as running once every app container has run
// for runOnceSteady; a container seen Running just after its start is not
// yet settled (it may be about to fail).
func TestSettledPod(t *testing.T) {
	now := time.Unix(1000, 0)
	running := func(age time.Duration) pod.ContainerStatus {
		return pod.ContainerStatus{State: pod.ContainerState{Running: &pod.StateRunning{StartedAt: now.Add(-age)}}}
	}
	tests := []struct {
		name            string
		st              pod.Status
		settled, failed bool
	}{
		{name: "running long enough", st: pod.Status{ContainerStatuses: []pod.ContainerStatus{running(2 * time.Second), running(time.Second)}}, settled: true},
		{name: "one just started", st: pod.Status{ContainerStatuses: []pod.ContainerStatus{running(2 * time.Second), running(10 * time.Millisecond)}}},
		{name: "no containers yet", st: pod.Status{}},
		{name: "succeeded", st: pod.Status{Phase: pod.PhaseSucceeded}, settled: true},
		{name: "failed", st: pod.Status{Phase: pod.PhaseFailed}, settled: true, failed: true},
		{name: "crash loop", st: pod.Status{ContainerStatuses: []pod.ContainerStatus{{State: pod.ContainerState{Waiting: &pod.StateWaiting{Reason: pod.ReasonCrashLoopBackOff}}}}}, settled: true, failed: true},
		{name: "image that does not fit", st: pod.Status{ContainerStatuses: []pod.ContainerStatus{{State: pod.ContainerState{Waiting: &pod.StateWaiting{Reason: pod.ReasonImagePullDeferred}}}}}, settled: true, failed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if s, f := settledPod(&tt.st, now); s != tt.settled || f != tt.failed {
				t.Errorf("settledPod = %v, %v; want %v, %v", s, f, tt.settled, tt.failed)
			}
		})
	}
}
