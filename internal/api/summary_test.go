package api

import (
	"testing"
	"time"

	"tug/internal/pod"
	"tug/internal/podview"
)

var now = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) time.Time { return now.Add(-d) }

func agoPtr(d time.Duration) *time.Time { t := ago(d); return &t }

// Container state builders for hand-built statuses.
func running(name string, ready bool, restarts int32) pod.ContainerStatus {
	return pod.ContainerStatus{Name: name, Ready: ready, RestartCount: restarts,
		State: pod.ContainerState{Running: &pod.StateRunning{StartedAt: ago(time.Minute)}}}
}

func waiting(name, reason string, restarts int32) pod.ContainerStatus {
	return pod.ContainerStatus{Name: name, RestartCount: restarts,
		State: pod.ContainerState{Waiting: &pod.StateWaiting{Reason: reason}}}
}

func terminated(name, reason string, code, signal int32) pod.ContainerStatus {
	return pod.ContainerStatus{Name: name, State: pod.ContainerState{Terminated: &pod.StateTerminated{
		Reason: reason, ExitCode: code, Signal: signal, FinishedAt: ago(time.Minute)}}}
}

// lastDied sets when the container's previous run ended.
func lastDied(c pod.ContainerStatus, d time.Duration) pod.ContainerStatus {
	c.LastTerminationState.Terminated = &pod.StateTerminated{Reason: pod.ReasonError, ExitCode: 1, FinishedAt: ago(d)}
	return c
}

func cond(typ string, ok bool) pod.Condition {
	c := pod.Condition{Type: typ, Status: "False"}
	if ok {
		c.Status = "True"
	}
	return c
}

// updateBlocked is a False tug.io/UpdateReady condition with reason.
func updateBlocked(reason string) pod.Condition {
	c := cond(pod.ConditionUpdateReady, false)
	c.Reason, c.Message = reason, "container a: the update to image x cannot start"
	return c
}

// deletedAgo sets v's deletion fields: removed d ago, 8 s of grace.
func deletedAgo(v podview.View, d time.Duration) podview.View {
	grace := int64(8)
	v.Metadata.DeletionTimestamp, v.Metadata.DeletionGracePeriodSeconds = agoPtr(d), &grace
	return v
}

// view builds a pod with nInit init containers and nApp app containers in
// its spec.
func view(nInit, nApp int, st pod.Status) podview.View {
	v := podview.View{APIVersion: "v1", Kind: "Pod", Status: st}
	v.Metadata.Name, v.Metadata.Namespace = "p", "default"
	for range nInit {
		v.Spec.InitContainers = append(v.Spec.InitContainers, pod.Container{})
	}
	for range nApp {
		v.Spec.Containers = append(v.Spec.Containers, pod.Container{})
	}
	return v
}

func TestSummarize(t *testing.T) {
	tests := []struct {
		name     string
		view     podview.View
		deleting bool
		want     Summary
	}{
		{
			name: "running and ready",
			view: view(0, 2, pod.Status{Phase: pod.PhaseRunning, StartTime: agoPtr(200 * time.Second),
				Conditions:        []pod.Condition{cond(pod.ConditionInitialized, true), cond(pod.ConditionReady, true)},
				ContainerStatuses: []pod.ContainerStatus{running("a", true, 0), running("b", true, 0)}}),
			want: Summary{Ready: "2/2", Status: "Running", Restarts: "0", Age: "3m20s"},
		},
		{
			name: "one of two not ready",
			view: view(0, 2, pod.Status{Phase: pod.PhaseRunning, StartTime: agoPtr(5 * time.Second),
				ContainerStatuses: []pod.ContainerStatus{running("a", true, 0), running("b", false, 0)}}),
			want: Summary{Ready: "1/2", Status: "Running", Restarts: "0", Age: "5s"},
		},
		{
			name: "no status yet",
			view: view(0, 1, pod.Status{Phase: pod.PhasePending}),
			want: Summary{Ready: "0/1", Status: "Pending", Restarts: "0", Age: "<unknown>"},
		},
		{
			name: "blocked, never created",
			view: view(1, 1, pod.Status{Phase: pod.PhasePending, Reason: pod.ReasonBlocked, Message: "spec.hostNetwork: true is not allowed",
				InitContainerStatuses: []pod.ContainerStatus{waiting("i", pod.ReasonBlocked, 0)},
				ContainerStatuses:     []pod.ContainerStatus{waiting("a", pod.ReasonBlocked, 0)}}),
			want: Summary{Ready: "0/1", Status: "Blocked", Restarts: "0", Age: "<unknown>"},
		},
		{
			name: "blocked update while the admitted version runs",
			view: view(0, 1, pod.Status{Phase: pod.PhaseRunning, Reason: pod.ReasonBlocked, StartTime: agoPtr(5 * time.Second),
				Conditions:        []pod.Condition{cond(pod.ConditionReady, true)},
				ContainerStatuses: []pod.ContainerStatus{running("a", true, 0)}}),
			want: Summary{Ready: "1/1", Status: "Blocked", Restarts: "0", Age: "5s"},
		},
		{
			name: "creating",
			view: view(0, 1, pod.Status{Phase: pod.PhasePending, StartTime: agoPtr(time.Second),
				ContainerStatuses: []pod.ContainerStatus{waiting("a", pod.ReasonContainerCreating, 0)}}),
			want: Summary{Ready: "0/1", Status: "ContainerCreating", Restarts: "0", Age: "1s"},
		},
		{
			name: "crash loop, restarts with the age of the last one",
			view: view(0, 1, pod.Status{Phase: pod.PhaseRunning, StartTime: agoPtr(3 * time.Minute),
				ContainerStatuses: []pod.ContainerStatus{lastDied(waiting("a", pod.ReasonCrashLoopBackOff, 4), 20*time.Second)}}),
			want: Summary{Ready: "0/1", Status: "CrashLoopBackOff", Restarts: "4 (20s ago)", Age: "3m"},
		},
		{
			name: "restarts summed, latest restart wins",
			view: view(0, 2, pod.Status{Phase: pod.PhaseRunning, StartTime: agoPtr(26 * time.Hour),
				Conditions: []pod.Condition{cond(pod.ConditionReady, true)},
				ContainerStatuses: []pod.ContainerStatus{
					lastDied(running("a", true, 2), 5*time.Hour),
					lastDied(running("b", true, 3), 90*time.Minute),
				}}),
			want: Summary{Ready: "2/2", Status: "Running", Restarts: "5 (90m ago)", Age: "26h"},
		},
		{
			name: "restarts without a known last run",
			view: view(0, 1, pod.Status{Phase: pod.PhaseRunning, StartTime: agoPtr(3 * 24 * time.Hour),
				ContainerStatuses: []pod.ContainerStatus{running("a", true, 7)}}),
			want: Summary{Ready: "1/1", Status: "Running", Restarts: "7", Age: "3d"},
		},
		{
			name: "image pull error",
			view: view(0, 1, pod.Status{Phase: pod.PhasePending, StartTime: agoPtr(time.Minute),
				ContainerStatuses: []pod.ContainerStatus{waiting("a", pod.ReasonErrImagePull, 0)}}),
			want: Summary{Ready: "0/1", Status: "ErrImagePull", Restarts: "0", Age: "60s"},
		},
		{
			name: "first container with a reason has the last word",
			view: view(0, 2, pod.Status{Phase: pod.PhasePending, StartTime: agoPtr(time.Minute),
				ContainerStatuses: []pod.ContainerStatus{waiting("a", pod.ReasonImagePullBackOff, 0), waiting("b", pod.ReasonCreateContainerError, 0)}}),
			want: Summary{Ready: "0/2", Status: "ImagePullBackOff", Restarts: "0", Age: "60s"},
		},
		{
			name: "completed",
			view: view(0, 1, pod.Status{Phase: pod.PhaseSucceeded, StartTime: agoPtr(10 * time.Minute),
				ContainerStatuses: []pod.ContainerStatus{terminated("a", pod.ReasonCompleted, 0, 0)}}),
			want: Summary{Ready: "0/1", Status: "Completed", Restarts: "0", Age: "10m"},
		},
		{
			name: "error",
			view: view(0, 1, pod.Status{Phase: pod.PhaseFailed, StartTime: agoPtr(10 * time.Minute),
				ContainerStatuses: []pod.ContainerStatus{terminated("a", pod.ReasonError, 1, 0)}}),
			want: Summary{Ready: "0/1", Status: "Error", Restarts: "0", Age: "10m"},
		},
		{
			name: "OOM killed",
			view: view(0, 1, pod.Status{Phase: pod.PhaseFailed, StartTime: agoPtr(10 * time.Minute),
				ContainerStatuses: []pod.ContainerStatus{terminated("a", pod.ReasonOOMKilled, 137, 9)}}),
			want: Summary{Ready: "0/1", Status: "OOMKilled", Restarts: "0", Age: "10m"},
		},
		{
			name: "terminated without a reason: signal",
			view: view(0, 1, pod.Status{Phase: pod.PhaseFailed,
				ContainerStatuses: []pod.ContainerStatus{terminated("a", "", 143, 15)}}),
			want: Summary{Ready: "0/1", Status: "Signal:15", Restarts: "0", Age: "<unknown>"},
		},
		{
			name: "terminated without a reason: exit code",
			view: view(0, 1, pod.Status{Phase: pod.PhaseFailed,
				ContainerStatuses: []pod.ContainerStatus{terminated("a", "", 3, 0)}}),
			want: Summary{Ready: "0/1", Status: "ExitCode:3", Restarts: "0", Age: "<unknown>"},
		},
		{
			name: "completed while another runs and the pod is ready",
			view: view(0, 2, pod.Status{Phase: pod.PhaseRunning,
				Conditions:        []pod.Condition{cond(pod.ConditionReady, true)},
				ContainerStatuses: []pod.ContainerStatus{terminated("a", pod.ReasonCompleted, 0, 0), running("b", true, 0)}}),
			want: Summary{Ready: "1/2", Status: "Running", Restarts: "0", Age: "<unknown>"},
		},
		{
			name: "completed while another runs and the pod is not ready",
			view: view(0, 2, pod.Status{Phase: pod.PhaseRunning,
				Conditions:        []pod.Condition{cond(pod.ConditionReady, false)},
				ContainerStatuses: []pod.ContainerStatus{terminated("a", pod.ReasonCompleted, 0, 0), running("b", true, 0)}}),
			want: Summary{Ready: "1/2", Status: "NotReady", Restarts: "0", Age: "<unknown>"},
		},
		{
			name: "status reason when containers say nothing",
			view: view(0, 1, pod.Status{Phase: pod.PhasePending, Reason: "SyncError"}),
			want: Summary{Ready: "0/1", Status: "SyncError", Restarts: "0", Age: "<unknown>"},
		},
		{
			name: "first init container running",
			view: view(2, 1, pod.Status{Phase: pod.PhasePending, StartTime: agoPtr(35 * time.Second),
				Conditions: []pod.Condition{cond(pod.ConditionInitialized, false)},
				InitContainerStatuses: []pod.ContainerStatus{running("i0", false, 0),
					waiting("i1", pod.ReasonPodInitializing, 0)},
				ContainerStatuses: []pod.ContainerStatus{waiting("a", pod.ReasonPodInitializing, 0)}}),
			want: Summary{Ready: "0/1", Status: "Init:0/2", Restarts: "0", Age: "35s"},
		},
		{
			name: "second init container waiting to start",
			view: view(2, 1, pod.Status{Phase: pod.PhasePending,
				InitContainerStatuses: []pod.ContainerStatus{terminated("i0", pod.ReasonCompleted, 0, 0),
					waiting("i1", pod.ReasonPodInitializing, 0)},
				ContainerStatuses: []pod.ContainerStatus{waiting("a", pod.ReasonPodInitializing, 0)}}),
			want: Summary{Ready: "0/1", Status: "Init:1/2", Restarts: "0", Age: "<unknown>"},
		},
		{
			name: "init container crash loop counts init restarts",
			view: view(2, 1, pod.Status{Phase: pod.PhasePending, StartTime: agoPtr(8 * time.Minute),
				InitContainerStatuses: []pod.ContainerStatus{terminated("i0", pod.ReasonCompleted, 0, 0),
					lastDied(waiting("i1", pod.ReasonCrashLoopBackOff, 3), 40*time.Second)},
				ContainerStatuses: []pod.ContainerStatus{waiting("a", pod.ReasonPodInitializing, 0)}}),
			want: Summary{Ready: "0/1", Status: "Init:CrashLoopBackOff", Restarts: "3 (40s ago)", Age: "8m"},
		},
		{
			name: "init container failed under Never",
			view: view(1, 1, pod.Status{Phase: pod.PhaseFailed,
				InitContainerStatuses: []pod.ContainerStatus{terminated("i0", pod.ReasonError, 1, 0)},
				ContainerStatuses:     []pod.ContainerStatus{waiting("a", pod.ReasonPodInitializing, 0)}}),
			want: Summary{Ready: "0/1", Status: "Init:Error", Restarts: "0", Age: "<unknown>"},
		},
		{
			name: "init container killed without a reason",
			view: view(1, 1, pod.Status{Phase: pod.PhasePending,
				InitContainerStatuses: []pod.ContainerStatus{terminated("i0", "", 137, 9)}}),
			want: Summary{Ready: "0/1", Status: "Init:Signal:9", Restarts: "0", Age: "<unknown>"},
		},
		{
			name: "init container exit code without a reason",
			view: view(1, 1, pod.Status{Phase: pod.PhasePending,
				InitContainerStatuses: []pod.ContainerStatus{terminated("i0", "", 2, 0)}}),
			want: Summary{Ready: "0/1", Status: "Init:ExitCode:2", Restarts: "0", Age: "<unknown>"},
		},
		{
			name: "init image pull error",
			view: view(1, 1, pod.Status{Phase: pod.PhasePending,
				InitContainerStatuses: []pod.ContainerStatus{waiting("i0", pod.ReasonErrImagePull, 0)}}),
			want: Summary{Ready: "0/1", Status: "Init:ErrImagePull", Restarts: "0", Age: "<unknown>"},
		},
		{
			name: "initialized: app containers starting",
			view: view(1, 1, pod.Status{Phase: pod.PhasePending,
				Conditions:            []pod.Condition{cond(pod.ConditionInitialized, true)},
				InitContainerStatuses: []pod.ContainerStatus{lastDied(terminated("i0", pod.ReasonCompleted, 0, 0), time.Minute)},
				ContainerStatuses:     []pod.ContainerStatus{waiting("a", pod.ReasonPodInitializing, 0)}}),
			want: Summary{Ready: "0/1", Status: "PodInitializing", Restarts: "0", Age: "<unknown>"},
		},
		{
			name: "initialized: init restarts no longer count",
			view: view(1, 1, pod.Status{Phase: pod.PhaseRunning,
				Conditions: []pod.Condition{cond(pod.ConditionInitialized, true), cond(pod.ConditionReady, true)},
				InitContainerStatuses: []pod.ContainerStatus{func() pod.ContainerStatus {
					c := lastDied(terminated("i0", pod.ReasonCompleted, 0, 0), time.Hour)
					c.RestartCount = 2
					return c
				}()},
				ContainerStatuses: []pod.ContainerStatus{running("a", true, 0)}}),
			want: Summary{Ready: "1/1", Status: "Running", Restarts: "0", Age: "<unknown>"},
		},
		{
			name:     "terminating",
			view:     view(0, 1, pod.Status{Phase: pod.PhaseRunning, ContainerStatuses: []pod.ContainerStatus{running("a", true, 0)}}),
			deleting: true,
			want:     Summary{Ready: "1/1", Status: "Terminating", Restarts: "0", Age: "<unknown>"},
		},
		{
			name: "terminating by its deletionTimestamp, Ready false, containers still running",
			view: deletedAgo(view(0, 1, pod.Status{Phase: pod.PhaseRunning, StartTime: agoPtr(time.Hour),
				Conditions:        []pod.Condition{cond(pod.ConditionInitialized, true), cond(pod.ConditionReady, false)},
				ContainerStatuses: []pod.ContainerStatus{running("a", true, 0)}}), 3*time.Second),
			want: Summary{Ready: "1/1", Status: "Terminating", Restarts: "0", Age: "60m"},
		},
		{
			name: "terminating outranks a blocked update and a crash loop",
			view: deletedAgo(view(0, 2, pod.Status{Phase: pod.PhaseRunning,
				Conditions:        []pod.Condition{updateBlocked(pod.ReasonImagePullBackOff)},
				ContainerStatuses: []pod.ContainerStatus{running("a", true, 0), waiting("b", pod.ReasonCrashLoopBackOff, 4)}}), time.Second),
			want: Summary{Ready: "1/2", Status: "Terminating", Restarts: "4", Age: "<unknown>"},
		},
		{
			name: "finished pod with a deletionTimestamp is not terminating",
			view: deletedAgo(view(0, 1, pod.Status{Phase: pod.PhaseFailed,
				ContainerStatuses: []pod.ContainerStatus{terminated("a", pod.ReasonError, 1, 0)}}), time.Second),
			want: Summary{Ready: "0/1", Status: "Error", Restarts: "0", Age: "<unknown>"},
		},
		{
			name: "update blocked on its image pull: the old container runs",
			view: view(0, 1, pod.Status{Phase: pod.PhaseRunning, StartTime: agoPtr(10 * time.Minute),
				Conditions:        []pod.Condition{cond(pod.ConditionInitialized, true), cond(pod.ConditionReady, true), updateBlocked(pod.ReasonImagePullBackOff)},
				ContainerStatuses: []pod.ContainerStatus{running("a", true, 0)}}),
			want: Summary{Ready: "1/1", Status: "Running (update: ImagePullBackOff)", Restarts: "0", Age: "10m"},
		},
		{
			name: "update blocked beside another container's crash loop",
			view: view(0, 2, pod.Status{Phase: pod.PhaseRunning,
				Conditions:        []pod.Condition{updateBlocked(pod.ReasonErrImagePull)},
				ContainerStatuses: []pod.ContainerStatus{running("a", true, 0), lastDied(waiting("b", pod.ReasonCrashLoopBackOff, 2), 30*time.Second)}}),
			want: Summary{Ready: "1/2", Status: "CrashLoopBackOff (update: ErrImagePull)", Restarts: "2 (30s ago)", Age: "<unknown>"},
		},
		{
			name: "update blocked with no good spec to return to",
			view: view(0, 1, pod.Status{Phase: pod.PhaseRunning, Reason: "RolloutFailed",
				Conditions:        []pod.Condition{updateBlocked(pod.ReasonErrImageNeverPull)},
				ContainerStatuses: []pod.ContainerStatus{running("a", true, 0)}}),
			want: Summary{Ready: "1/1", Status: "RolloutFailed (update: ErrImageNeverPull)", Restarts: "0", Age: "<unknown>"},
		},
		{
			name: "an update that went through: UpdateReady True is plain Running",
			view: view(0, 1, pod.Status{Phase: pod.PhaseRunning,
				Conditions:        []pod.Condition{cond(pod.ConditionReady, true), cond(pod.ConditionUpdateReady, true)},
				ContainerStatuses: []pod.ContainerStatus{running("a", true, 0)}}),
			want: Summary{Ready: "1/1", Status: "Running", Restarts: "0", Age: "<unknown>"},
		},
		{
			name:     "finished pods are not terminating",
			view:     view(0, 1, pod.Status{Phase: pod.PhaseSucceeded, ContainerStatuses: []pod.ContainerStatus{terminated("a", pod.ReasonCompleted, 0, 0)}}),
			deleting: true,
			want:     Summary{Ready: "0/1", Status: "Completed", Restarts: "0", Age: "<unknown>"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Summarize(&tt.view, tt.deleting, now); got != tt.want {
				t.Errorf("Summarize = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestHumanDuration(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{-3 * time.Second, "<invalid>"},
		{-1500 * time.Millisecond, "0s"},
		{-999 * time.Millisecond, "0s"},
		{0, "0s"},
		{5 * time.Second, "5s"},
		{119 * time.Second, "119s"},
		{2 * time.Minute, "2m"},
		{200 * time.Second, "3m20s"},
		{9*time.Minute + 59*time.Second, "9m59s"},
		{10*time.Minute + 30*time.Second, "10m"},
		{179 * time.Minute, "179m"},
		{3 * time.Hour, "3h"},
		{5*time.Hour + 10*time.Minute, "5h10m"},
		{8*time.Hour + 30*time.Minute, "8h"},
		{47 * time.Hour, "47h"},
		{48 * time.Hour, "2d"},
		{3*24*time.Hour + 4*time.Hour, "3d4h"},
		{8 * 24 * time.Hour, "8d"},
		{729 * 24 * time.Hour, "729d"},
		{2 * 365 * 24 * time.Hour, "2y"},
		{(2*365 + 30) * 24 * time.Hour, "2y30d"},
		{8 * 365 * 24 * time.Hour, "8y"},
	}
	for _, tt := range tests {
		if got := HumanDuration(tt.d); got != tt.want {
			t.Errorf("HumanDuration(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}
