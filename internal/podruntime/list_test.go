package podruntime

import (
	"testing"
	"time"

	tasktypes "github.com/containerd/containerd/api/types/task"
	"github.com/containerd/containerd/v2/core/containers"
	"google.golang.org/protobuf/types/known/timestamppb"

	"tug/internal/pod"
	"tug/internal/podlabels"
	"tug/internal/testutil"
)

func TestRuntimeContainerState(t *testing.T) {
	p := testutil.Pod("web-node1")
	base := podlabels.ForContainer(p, &p.Spec.Containers[0], false, 0, "sha256:abc", "")
	withLabels := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	exited := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	startedLabel := map[string]string{podlabels.LabelStartedAt: exited.Add(-time.Minute).Format(time.RFC3339Nano)}
	tests := []struct {
		name   string
		labels map[string]string
		proc   *tasktypes.Process
		state  pod.RunState
		code   int
		pid    uint32
	}{
		{name: "running", labels: withLabels(startedLabel), proc: &tasktypes.Process{Status: tasktypes.Status_RUNNING, Pid: 42}, state: pod.RunRunning, pid: 42},
		{name: "created task", labels: base, proc: &tasktypes.Process{Status: tasktypes.Status_CREATED, Pid: 41}, state: pod.RunCreated, pid: 41},
		{name: "stopped task", labels: withLabels(startedLabel), proc: &tasktypes.Process{Status: tasktypes.Status_STOPPED, ExitStatus: 3, ExitedAt: timestamppb.New(exited)}, state: pod.RunExited, code: 3},
		{name: "unknown task", labels: base, proc: &tasktypes.Process{Status: tasktypes.Status_UNKNOWN}, state: pod.RunUnknown},
		{name: "task deleted by tug", labels: withLabels(podlabels.Exit(137, exited)), state: pod.RunExited, code: 137},
		{name: "task vanished", labels: withLabels(startedLabel), state: pod.RunExited, code: unknownExitCode},
		{name: "never started", labels: base, state: pod.RunCreated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := containers.Container{ID: "id", Image: "docker.io/library/busybox:1.35", Labels: tt.labels, CreatedAt: exited.Add(-time.Hour)}
			rc, ok := runtimeContainer(rec, tt.proc)
			if !ok {
				t.Fatal("not tug's")
			}
			if rc.State != tt.state || rc.ExitCode != tt.code || rc.PID != tt.pid {
				t.Errorf("state %s code %d pid %d, want %s %d %d", rc.State, rc.ExitCode, rc.PID, tt.state, tt.code, tt.pid)
			}
			if tt.state == pod.RunExited && tt.code != unknownExitCode && !rc.FinishedAt.Equal(exited) {
				t.Errorf("finished at %v, want %v", rc.FinishedAt, exited)
			}
			if rc.Image != rec.Image || rc.ImageID != "sha256:abc" || !rc.CreatedAt.Equal(rec.CreatedAt) {
				t.Errorf("image %q id %q created %v", rc.Image, rc.ImageID, rc.CreatedAt)
			}
		})
	}
}
