package api

import (
	"fmt"
	"strconv"
	"time"

	"tug/internal/pod"
	"tug/internal/podview"
)

// Summary is a pod as one row of "kubectl get pods".
type Summary struct {
	Ready    string // ready app containers / app containers, "1/2"
	Status   string // what kubectl's STATUS column would say
	Restarts string // "0", or "3 (20s ago)" when the last restart is known
	Age      string // since status.startTime, "<unknown>" without one
}

// Summarize computes the READY, STATUS, RESTARTS and AGE columns for v with
// the rules of kubectl's pod printer, at time now. A pod tug is removing
// (v's metadata.deletionTimestamp is set, or deleting says so) shows
// "Terminating" unless it has finished.
//
// STATUS starts as the phase (or status.reason when set). While the pod is
// initializing, the first init container that has not succeeded decides it:
// "Init:<reason>" for a failed or waiting one ("Init:CrashLoopBackOff",
// "Init:Error", "Init:ExitCode:2" when the runtime gave no reason), else
// "Init:N/M" (N init containers done of M). Once initialized, the first app
// container that is waiting or terminated gives its reason
// ("CrashLoopBackOff", "ErrImagePull", "PodInitializing", "Completed",
// "OOMKilled", ...); "Completed" becomes "Running" (or "NotReady" when the
// pod is not Ready) while another container still runs. RESTARTS counts the
// init containers' restarts while initializing and the app containers'
// afterwards, with the age of the latest lastState.terminated.finishedAt.
// A pod whose status.reason is Blocked (tug's admission policy refused it or
// its latest update) shows "Blocked" whatever its containers do. A pod
// whose update is blocked (its tug.io/UpdateReady condition is False: the
// containers of its previous spec keep running) gets the condition's
// reason after its STATUS: "Running (update: ImagePullBackOff)".
func Summarize(v *podview.View, deleting bool, now time.Time) Summary {
	deleting = deleting || v.Metadata.DeletionTimestamp != nil
	st := &v.Status
	status := string(st.Phase)
	if st.Reason != "" {
		status = st.Reason
	}
	var (
		restarts    int
		lastRestart time.Time
	)
	count := func(c *pod.ContainerStatus) {
		restarts += int(c.RestartCount)
		if t := c.LastTerminationState.Terminated; t != nil && t.FinishedAt.After(lastRestart) {
			lastRestart = t.FinishedAt
		}
	}

	initializing := false
	for i := range st.InitContainerStatuses {
		c := &st.InitContainerStatuses[i]
		count(c)
		if s, blocking := initStatus(c, i, len(v.Spec.InitContainers)); blocking {
			status, initializing = s, true
			break
		}
	}

	ready := 0
	if !initializing || conditionTrue(st, pod.ConditionInitialized) {
		// Init containers' restarts stop counting once the pod runs (tug has
		// no restartable "sidecar" init containers, which would still count).
		restarts, lastRestart = 0, time.Time{}
		running := false
		// Backwards, so that the first container with a reason has the last word.
		for i := len(st.ContainerStatuses) - 1; i >= 0; i-- {
			c := &st.ContainerStatuses[i]
			count(c)
			switch {
			case c.State.Waiting != nil && c.State.Waiting.Reason != "":
				status = c.State.Waiting.Reason
			case c.State.Terminated != nil:
				status = terminatedStatus(c.State.Terminated, "")
			case c.Ready && c.State.Running != nil:
				running = true
				ready++
			}
		}
		if status == pod.ReasonCompleted && running {
			status = "NotReady"
			if conditionTrue(st, pod.ConditionReady) {
				status = string(pod.PhaseRunning)
			}
		}
	}

	if st.Reason == pod.ReasonBlocked {
		// tug's own: admission refused the pod, or its update (while the
		// last admitted version runs); it outranks what the containers say.
		status = pod.ReasonBlocked
	}
	if st.Reason == pod.ReasonRolledBack {
		// tug's own too: the newest spec failed and the pod runs its last
		// good spec (its containers' state is in READY and RESTARTS).
		status = pod.ReasonRolledBack
	}
	if c := condition(st, pod.ConditionUpdateReady); c != nil && c.Status == "False" && c.Reason != "" {
		status += " (update: " + c.Reason + ")"
	}
	if deleting && st.Phase != pod.PhaseSucceeded && st.Phase != pod.PhaseFailed {
		status = "Terminating"
	}

	s := Summary{
		Ready:    fmt.Sprintf("%d/%d", ready, len(v.Spec.Containers)),
		Status:   status,
		Restarts: strconv.Itoa(restarts),
		Age:      "<unknown>",
	}
	if restarts != 0 && !lastRestart.IsZero() {
		s.Restarts = fmt.Sprintf("%d (%s ago)", restarts, HumanDuration(now.Sub(lastRestart)))
	}
	if st.StartTime != nil && !st.StartTime.IsZero() {
		s.Age = HumanDuration(now.Sub(*st.StartTime))
	}
	return s
}

// initStatus is the STATUS an init container (the i-th of n) gives the pod,
// and whether it holds the pod's initialization up; one that succeeded does
// not.
func initStatus(c *pod.ContainerStatus, i, n int) (string, bool) {
	switch w, t := c.State.Waiting, c.State.Terminated; {
	case t != nil && t.ExitCode == 0:
		return "", false
	case t != nil:
		return terminatedStatus(t, "Init:"), true
	case w != nil && w.Reason != "" && w.Reason != pod.ReasonPodInitializing:
		return "Init:" + w.Reason, true
	default:
		return fmt.Sprintf("Init:%d/%d", i, n), true
	}
}

// terminatedStatus is a terminated container's reason, or its signal or
// exit code when the runtime gave none, after prefix.
func terminatedStatus(t *pod.StateTerminated, prefix string) string {
	switch {
	case t.Reason != "":
		return prefix + t.Reason
	case t.Signal != 0:
		return fmt.Sprintf("%sSignal:%d", prefix, t.Signal)
	default:
		return fmt.Sprintf("%sExitCode:%d", prefix, t.ExitCode)
	}
}

func conditionTrue(st *pod.Status, typ string) bool {
	c := condition(st, typ)
	return c != nil && c.Status == "True"
}

// condition returns st's condition of type typ, or nil.
func condition(st *pod.Status, typ string) *pod.Condition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == typ {
			return &st.Conditions[i]
		}
	}
	return nil
}

// HumanDuration writes d with two or three significant figures, as kubectl
// does for ages: "45s", "3m20s", "25m", "5h10m", "20h", "3d4h", "40d",
// "2y30d". Up to a second in the future (clock skew) is "0s"; more is
// "<invalid>".
func HumanDuration(d time.Duration) string {
	seconds := int(d.Seconds())
	switch {
	case seconds < -1:
		return "<invalid>"
	case seconds < 0:
		return "0s"
	case seconds < 2*60:
		return fmt.Sprintf("%ds", seconds)
	}
	minutes := int(d / time.Minute)
	switch {
	case minutes < 10:
		return withRest(minutes, "m", seconds%60, "s")
	case minutes < 3*60:
		return fmt.Sprintf("%dm", minutes)
	}
	hours := int(d / time.Hour)
	days := hours / 24
	switch {
	case hours < 8:
		return withRest(hours, "h", minutes%60, "m")
	case hours < 48:
		return fmt.Sprintf("%dh", hours)
	case hours < 8*24:
		return withRest(days, "d", hours%24, "h")
	case hours < 2*365*24:
		return fmt.Sprintf("%dd", days)
	case hours < 8*365*24:
		return withRest(days/365, "y", days%365, "d")
	}
	return fmt.Sprintf("%dy", days/365)
}

// withRest writes "<n><unit><rest><restUnit>", leaving a zero rest out.
func withRest(n int, unit string, rest int, restUnit string) string {
	if rest == 0 {
		return strconv.Itoa(n) + unit
	}
	return fmt.Sprintf("%d%s%d%s", n, unit, rest, restUnit)
}
