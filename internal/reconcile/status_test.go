package reconcile

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"tug/internal/pod"
)

func TestComputeStatus(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rec := func(name string, attempt int, state pod.RunState, code int, init bool) pod.RuntimeContainer {
		return pod.RuntimeContainer{ID: name + "-" + string(rune('0'+attempt)), PodUID: "u", Name: name, Attempt: attempt, Init: init,
			State: state, ExitCode: code, CreatedAt: t0, StartedAt: t0, FinishedAt: t0.Add(time.Second)}
	}
	oom := rec("app", 0, pod.RunExited, 137, false)
	oom.OOMKilled = true
	tests := []struct {
		name       string
		policy     pod.RestartPolicy
		inits      []string
		recs       []pod.RuntimeContainer
		waiting    map[string]pod.StateWaiting
		wantPhase  pod.Phase
		wantReason string // of the app container's state: waiting or terminated reason, or "running"
		wantReady  bool
		wantInit   bool
	}{
		{"nothing created yet", pod.RestartAlways, nil, nil, nil, pod.PhasePending, pod.ReasonContainerCreating, false, true},
		{"running", pod.RestartAlways, nil, []pod.RuntimeContainer{rec("app", 0, pod.RunRunning, 0, false)}, nil, pod.PhaseRunning, "running", true, true},
		{"completed under OnFailure", pod.RestartOnFailure, nil, []pod.RuntimeContainer{rec("app", 0, pod.RunExited, 0, false)}, nil, pod.PhaseSucceeded, pod.ReasonCompleted, false, true},
		{"failed under Never", pod.RestartNever, nil, []pod.RuntimeContainer{rec("app", 0, pod.RunExited, 1, false)}, nil, pod.PhaseFailed, pod.ReasonError, false, true},
		{"OOM killed under Never", pod.RestartNever, nil, []pod.RuntimeContainer{oom}, nil, pod.PhaseFailed, pod.ReasonOOMKilled, false, true},
		{"crash loop", pod.RestartAlways, nil, []pod.RuntimeContainer{rec("app", 3, pod.RunExited, 1, false)},
			map[string]pod.StateWaiting{"app": {Reason: pod.ReasonCrashLoopBackOff}}, pod.PhaseRunning, pod.ReasonCrashLoopBackOff, false, true},
		{"image pull failing", pod.RestartAlways, nil, nil,
			map[string]pod.StateWaiting{"app": {Reason: pod.ReasonImagePullBackOff, Message: "pull image"}}, pod.PhasePending, pod.ReasonImagePullBackOff, false, true},
		{"init running", pod.RestartAlways, []string{"init"}, []pod.RuntimeContainer{rec("init", 0, pod.RunRunning, 0, true)}, nil, pod.PhasePending, pod.ReasonPodInitializing, false, false},
		{"init done, app running", pod.RestartAlways, []string{"init"},
			[]pod.RuntimeContainer{rec("init", 0, pod.RunExited, 0, true), rec("app", 0, pod.RunRunning, 0, false)}, nil, pod.PhaseRunning, "running", true, true},
		{"init failed under Never", pod.RestartNever, []string{"init"}, []pod.RuntimeContainer{rec("init", 0, pod.RunExited, 2, true)}, nil, pod.PhaseFailed, pod.ReasonPodInitializing, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPod(tt.policy, tt.inits, []string{"app"})
			n := podNotes{waiting: tt.waiting, conditions: map[string]pod.Condition{}, firstSeen: t0}
			if n.waiting == nil {
				n.waiting = map[string]pod.StateWaiting{}
			}
			st := computeStatus(p, tt.recs, n, t0.Add(time.Minute))
			if st.Phase != tt.wantPhase {
				t.Errorf("phase = %s, want %s", st.Phase, tt.wantPhase)
			}
			cs := st.ContainerStatuses[0]
			got := "running"
			switch {
			case cs.State.Waiting != nil:
				got = cs.State.Waiting.Reason
			case cs.State.Terminated != nil:
				got = cs.State.Terminated.Reason
			case cs.State.Running == nil:
				got = "none"
			}
			if got != tt.wantReason {
				t.Errorf("app state = %s, want %s", got, tt.wantReason)
			}
			if cs.Ready != tt.wantReady {
				t.Errorf("ready = %v, want %v", cs.Ready, tt.wantReady)
			}
			if init := st.Conditions[0]; init.Type != pod.ConditionInitialized || (init.Status == "True") != tt.wantInit {
				t.Errorf("Initialized = %+v, want %v", init, tt.wantInit)
			}
			if ready := st.Conditions[2]; (ready.Status == "True") != tt.wantReady {
				t.Errorf("Ready condition = %+v, want %v", ready, tt.wantReady)
			}
		})
	}
}

func TestStartErrorReason(t *testing.T) {
	pull := fmt.Errorf("pull image %q: %w: timeout", "x", pod.ErrImagePull)
	tests := []struct {
		err  error
		prev string
		want string
	}{
		{pull, "", pod.ReasonErrImagePull},
		{pull, pod.ReasonErrImagePull, pod.ReasonImagePullBackOff},
		{pull, pod.ReasonImagePullBackOff, pod.ReasonImagePullBackOff},
		{pull, pod.ReasonCrashLoopBackOff, pod.ReasonErrImagePull},
		{fmt.Errorf("image: %w", pod.ErrImageNeverPull), "", pod.ReasonErrImageNeverPull},
		{errors.New("mount: no such file"), "", pod.ReasonCreateContainerError},
		{fmt.Errorf("start: %w: runAsNonRoot", pod.ErrCreateContainerConfig), "", pod.ReasonCreateContainerConfigError},
		{fmt.Errorf("pull image %q: %w", "x", pod.ErrImagePullDeferred), "", pod.ReasonImagePullDeferred},
		{fmt.Errorf("pull image %q: %w", "x", pod.ErrImagePullDeferred), pod.ReasonImagePullBackOff, pod.ReasonImagePullDeferred},
		{pull, pod.ReasonImagePullDeferred, pod.ReasonErrImagePull},
	}
	for _, tt := range tests {
		if got := startErrorReason(tt.err, tt.prev); got != tt.want {
			t.Errorf("startErrorReason(%v, %q) = %s, want %s", tt.err, tt.prev, got, tt.want)
		}
	}
}

// TestComputeStatusSidecarsJobsAndAdmission: sidecars, Jobs' backoffLimit and node
// admission in a pod's status.
func TestComputeStatusSidecarsJobsAndAdmission(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rec := func(name string, attempt int, state pod.RunState, code int, init bool) pod.RuntimeContainer {
		return pod.RuntimeContainer{ID: fmt.Sprintf("%s-%d", name, attempt), PodUID: "u", Name: name, Attempt: attempt, Init: init,
			State: state, ExitCode: code, CreatedAt: t0, StartedAt: t0, FinishedAt: t0.Add(time.Second)}
	}
	limit := int32(2)
	always := pod.RestartAlways
	tests := []struct {
		name       string
		policy     pod.RestartPolicy
		sidecar    bool
		job        bool
		recs       []pod.RuntimeContainer
		failedAs   string
		wantPhase  pod.Phase
		wantReason string // the pod's
		wantInit   bool
	}{
		{"sidecar running counts as initialized", pod.RestartAlways, true, false,
			[]pod.RuntimeContainer{rec("init", 0, pod.RunRunning, 0, true)}, "", pod.PhasePending, "", true},
		{"sidecar restarting beside the app", pod.RestartAlways, true, false,
			[]pod.RuntimeContainer{rec("init", 1, pod.RunExited, 1, true), rec("app", 0, pod.RunRunning, 0, false)}, "", pod.PhaseRunning, "", true},
		{"job retried below its limit", pod.RestartNever, false, true,
			[]pod.RuntimeContainer{rec("app", 1, pod.RunExited, 1, false)}, "", pod.PhaseRunning, "", true},
		{"job over its limit", pod.RestartOnFailure, false, true,
			[]pod.RuntimeContainer{rec("app", 2, pod.RunExited, 1, false)}, "", pod.PhaseFailed, "BackoffLimitExceeded", true},
		{"job completed", pod.RestartOnFailure, false, true,
			[]pod.RuntimeContainer{rec("app", 1, pod.RunExited, 0, false)}, "", pod.PhaseSucceeded, "", true},
		{"refused by node affinity", pod.RestartAlways, false, false, nil, "NodeAffinity", pod.PhaseFailed, "NodeAffinity", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var inits []string
			if tt.sidecar {
				inits = []string{"init"}
			}
			p := testPod(tt.policy, inits, []string{"app"})
			if tt.sidecar {
				p.Spec.InitContainers[0].RestartPolicy = &always
			}
			if tt.job {
				p.BackoffLimit = &limit
			}
			n := podNotes{waiting: map[string]pod.StateWaiting{}, conditions: map[string]pod.Condition{}, firstSeen: t0}
			if tt.failedAs != "" {
				n.blocked, n.failedAs = "spec.nodeSelector[site]: no", tt.failedAs
			}
			st := computeStatus(p, tt.recs, n, t0.Add(time.Minute))
			if st.Phase != tt.wantPhase || st.Reason != tt.wantReason {
				t.Errorf("phase %s reason %q, want %s %q", st.Phase, st.Reason, tt.wantPhase, tt.wantReason)
			}
			if init := st.Conditions[0]; (init.Status == "True") != tt.wantInit {
				t.Errorf("Initialized = %+v, want %v", init, tt.wantInit)
			}
		})
	}
}
