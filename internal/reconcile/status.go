package reconcile

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"tug/internal/pod"
	"tug/internal/podplan"
)

// computeStatus derives a pod's Kubernetes-shaped status from its manifest,
// its containers as the runtime reports them, and what the workers noted.
// It follows the kubelet's rules (getPhase, the container state shown for
// a restarting container, the Initialized/ContainersReady/Ready
// conditions). Pure: conditions' transition times come from prev, and the
// caller stores the returned conditions for the next call.
func computeStatus(p *pod.Pod, recs []pod.RuntimeContainer, n podNotes, now time.Time) pod.Status {
	byName := podplan.GroupByName(recs)
	st := pod.Status{StartTime: startTime(recs, n.firstSeen)}
	var blocked *blockedUpdate
	// ran reports, for c's status cs, what runs of a previous spec of c:
	// its image is what the status reports, and an update of c that waits
	// for a failing reason is blocked.
	ran := func(c *pod.Container, cs *pod.ContainerStatus, sidecarOrApp bool) {
		old := outdated(p, c, byName[c.Name])
		if old == nil {
			return
		}
		if old.Image != "" {
			cs.Image = old.Image
		}
		if w := n.waiting[c.Name]; blocked == nil && sidecarOrApp && old.State == pod.RunRunning && failureReasons[w.Reason] {
			blocked = &blockedUpdate{container: c.Name, image: c.Image, waiting: w}
		}
	}

	initDone, initFailed := true, false
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		cs := containerStatus(c, byName[c.Name], podWaiting(n, byName[c.Name], n.waiting[c.Name]), true)
		probeStatus(n, c, &cs, true)
		ran(c, &cs, c.IsSidecar())
		st.InitContainerStatuses = append(st.InitContainerStatuses, cs)
		switch t := cs.State.Terminated; {
		case c.IsSidecar() && len(byName[c.Name]) > 0:
			// A sidecar is done with the init phase once it has started.
		case t != nil && t.ExitCode == 0:
		case t != nil && p.Spec.RestartPolicy == pod.RestartNever:
			initDone, initFailed = false, true
		default:
			initDone = false
		}
	}
	// Once app containers have run, the init containers are done.
	for _, c := range p.Spec.Containers {
		if len(byName[c.Name]) > 0 {
			initDone = !initFailed
		}
	}

	// restarting counts the stopped app containers that start again, as
	// their restart policy (their own, or else the pod's) says.
	var running, waiting, stopped, succeeded, restarting, ready int
	var unready []string
	for i := range p.Spec.Containers {
		c := &p.Spec.Containers[i]
		w := podWaiting(n, byName[c.Name], n.waiting[c.Name])
		if !initDone && w.Reason == "" {
			w.Reason = pod.ReasonPodInitializing
		}
		cs := containerStatus(c, byName[c.Name], w, false)
		probeStatus(n, c, &cs, false)
		ran(c, &cs, true)
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
		if !cs.Ready {
			unready = append(unready, c.Name)
		}
		switch {
		case cs.State.Running != nil:
			running++
			if cs.Ready {
				ready++
			}
		case cs.State.Terminated != nil:
			stopped++
			if cs.State.Terminated.ExitCode == 0 {
				succeeded++
			}
			if c.RestartsAfter(p.Spec.RestartPolicy, int(cs.State.Terminated.ExitCode)) {
				restarting++
			}
		case cs.State.Waiting != nil && cs.LastTerminationState.Terminated != nil:
			stopped++ // restarting: counted as stopped, as the kubelet does
			if cs.LastTerminationState.Terminated.ExitCode == 0 {
				succeeded++
			}
			if c.RestartsAfter(p.Spec.RestartPolicy, int(cs.LastTerminationState.Terminated.ExitCode)) {
				restarting++
			}
		default:
			waiting++
		}
	}

	switch {
	case initFailed:
		st.Phase = pod.PhaseFailed
	case !initDone, waiting > 0:
		st.Phase = pod.PhasePending
	case running > 0:
		st.Phase = pod.PhaseRunning
	case restarting > 0:
		st.Phase = pod.PhaseRunning // a stopped container starts again
	case stopped > 0 && stopped == succeeded:
		st.Phase = pod.PhaseSucceeded
	case stopped > 0:
		st.Phase = pod.PhaseFailed // no container starts again, one failed
	default:
		st.Phase = pod.PhasePending
	}
	if p.BackoffLimit != nil && !initFailed && st.Phase == pod.PhaseFailed && !jobOver(p, byName) {
		st.Phase = pod.PhaseRunning // a failed container of a Job is retried
	}
	if p.BackoffLimit != nil && !initFailed && jobOver(p, byName) {
		// A Job's pod: done once no container is retried any more.
		st.Phase = pod.PhaseSucceeded
		if stopped > succeeded {
			st.Phase, st.Reason = pod.PhaseFailed, "BackoffLimitExceeded"
			st.Message = fmt.Sprintf("Job has reached the specified backoff limit (%d)", *p.BackoffLimit)
		}
	}
	if n.syncErr != "" {
		st.Reason, st.Message = "SyncError", n.syncErr
	}
	if n.refused.Reason != "" {
		st.Reason, st.Message = n.refused.Reason, n.refused.Message
	}
	if n.blocked != "" {
		st.Reason, st.Message = pod.ReasonBlocked, n.blocked
	}
	if n.failedAs != "" && n.admitted == nil {
		// Refused by node admission and never run: Failed, as the kubelet
		// leaves a static pod that does not fit the node.
		st.Phase, st.Reason = pod.PhaseFailed, n.failedAs
	}
	if n.evicted != nil {
		st.Phase, st.Reason, st.Message = pod.PhaseFailed, ReasonEvicted, n.evicted.message
	}
	if n.ip != "" {
		st.PodIP, st.PodIPs = n.ip, []pod.PodIP{{IP: n.ip}}
	}

	allReady := ready == len(p.Spec.Containers)
	st.Conditions = []pod.Condition{
		condition(n.conditions, pod.ConditionInitialized, initDone, now, "ContainersNotInitialized"),
		withMessage(condition(n.conditions, pod.ConditionContainersReady, allReady, now, "ContainersNotReady"), unready),
		withMessage(condition(n.conditions, pod.ConditionReady, allReady, now, "ContainersNotReady"), unready),
		condition(n.conditions, pod.ConditionPodScheduled, true, now, ""),
	}
	if n.devices.has {
		c := condition(n.conditions, pod.ConditionDevicesReady, len(n.devices.gone) == 0, now, ReasonDeviceUnavailable)
		if c.Status == "False" {
			c.Message = n.devices.message()
		}
		st.Conditions = append(st.Conditions, c)
	}
	st.Conditions = append(st.Conditions, n.resizeConds...)
	if blocked != nil {
		c := condition(n.conditions, pod.ConditionUpdateReady, false, now, blocked.waiting.Reason)
		c.Message = blocked.message()
		st.Conditions = append(st.Conditions, c)
	} else if n.conditions != nil {
		delete(n.conditions, pod.ConditionUpdateReady)
	}
	return st
}

// blockedUpdate is a container whose update is blocked: the container of
// its previous spec runs, and its current spec (image) waits for a reason
// that fails it (ErrImagePull, ImagePullBackOff, ...).
type blockedUpdate struct {
	container, image string
	waiting          pod.StateWaiting
}

// message is the UpdateReady condition's message.
func (b *blockedUpdate) message() string {
	msg := fmt.Sprintf("container %s: the update to image %s cannot start (%s", b.container, b.image, b.waiting.Reason)
	if b.waiting.Message != "" {
		msg += ": " + b.waiting.Message
	}
	return msg + "); the container of its previous spec keeps running"
}

// outdated returns the newest record of container c of p when it was
// created from another spec than c's, else nil.
func outdated(p *pod.Pod, c *pod.Container, recs []pod.RuntimeContainer) *pod.RuntimeContainer {
	last := podplan.Latest(recs)
	if last == nil || last.SpecHash == pod.ContainerHash(p, c) {
		return nil
	}
	return last
}

// terminatingStatus is st, the status of a pod being removed since since,
// with its Ready condition False (reason PodTerminating) from then on: the
// pod no longer serves, whatever its containers' readiness said.
func terminatingStatus(st pod.Status, since time.Time) pod.Status {
	st.Conditions = slices.Clone(st.Conditions)
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if c.Type != pod.ConditionReady {
			continue
		}
		if c.Status != "False" || c.LastTransitionTime.IsZero() {
			c.LastTransitionTime = since
		}
		c.Status, c.Reason = "False", pod.ReasonTerminating
		c.Message = "the pod is being removed: no source lists it, and its containers are being stopped"
	}
	return st
}

// terminatingMeta is p's metadata with the deletion fields of a pod being
// removed since since.
func terminatingMeta(p *pod.Pod, since time.Time) pod.ObjectMeta {
	m := p.Metadata
	at := since.UTC()
	grace := int64(p.GracePeriod() / time.Second)
	m.DeletionTimestamp, m.DeletionGracePeriodSeconds = &at, &grace
	return m
}

// jobOver reports whether every app container of a Job's pod has exited
// and will not be retried.
func jobOver(p *pod.Pod, byName map[string][]pod.RuntimeContainer) bool {
	for _, c := range p.Spec.Containers {
		last := podplan.Latest(byName[c.Name])
		if last == nil || last.State != pod.RunExited || podplan.RestartsIn(p, last) {
			return false
		}
	}
	return len(p.Spec.Containers) > 0
}

// podWaiting is w, or, for a container with no record and no reason of
// its own, why the whole pod is not run: blocked by the admission policy,
// or refused (HostPortInUse, OutOfpods).
func podWaiting(n podNotes, recs []pod.RuntimeContainer, w pod.StateWaiting) pod.StateWaiting {
	if w.Reason != "" || len(recs) != 0 {
		return w
	}
	switch {
	case n.failedAs != "":
		return pod.StateWaiting{Reason: n.failedAs, Message: "the pod does not match this node"}
	case n.blocked != "":
		return pod.StateWaiting{Reason: pod.ReasonBlocked, Message: "the pod is blocked by the admission policy"}
	case n.refused.Reason != "":
		return n.refused
	}
	return w
}

// containerStatus is one container's status: its latest record's state
// (waiting when a note says so), the previous run as lastState.
func containerStatus(c *pod.Container, recs []pod.RuntimeContainer, w pod.StateWaiting, init bool) pod.ContainerStatus {
	cs := pod.ContainerStatus{Name: c.Name, Image: c.Image}
	last := podplan.Latest(recs)
	var prev *pod.RuntimeContainer
	for i := range recs {
		if r := &recs[i]; last != nil && r.ID != last.ID && r.State == pod.RunExited && (prev == nil || r.Attempt > prev.Attempt) {
			prev = r
		}
	}
	started := false
	if last != nil {
		cs.RestartCount = int32(last.Attempt)
		cs.ImageID = last.ImageID
		cs.ContainerID = "containerd://" + last.ID
		for _, vm := range c.VolumeMounts {
			if ref, ok := last.ImageVolume(vm.Name); ok {
				cs.VolumeMounts = append(cs.VolumeMounts, pod.VolumeMountStatus{
					Name: vm.Name, MountPath: vm.MountPath, ReadOnly: true, Image: &pod.ImageVolumeStatus{ImageRef: ref},
				})
			}
		}
		if a := last.Allocated; a != nil && last.State == pod.RunRunning {
			cs.AllocatedResources = computeResources(a.Requests)
			cs.Resources = &pod.Resources{Requests: computeResources(a.Requests), Limits: computeResources(a.Limits)}
		}
	}
	switch {
	case last == nil:
		cs.State.Waiting = waitingOr(w, pod.ReasonContainerCreating)
	case last.State == pod.RunRunning:
		cs.State.Running = &pod.StateRunning{StartedAt: last.StartedAt}
		cs.Ready = !init
		started = true
	case last.State == pod.RunExited && w.Reason != "":
		// Exited and waiting to be restarted (CrashLoopBackOff).
		cs.State.Waiting = &w
		prev = last
	case last.State == pod.RunExited:
		cs.State.Terminated = terminated(last)
	default:
		cs.State.Waiting = waitingOr(w, pod.ReasonContainerCreating)
	}
	if prev != nil {
		cs.LastTerminationState.Terminated = terminated(prev)
	}
	if !init {
		cs.Started = &started
	}
	return cs
}

func waitingOr(w pod.StateWaiting, reason string) *pod.StateWaiting {
	if w.Reason == "" {
		w.Reason = reason
	}
	return &w
}

func terminated(r *pod.RuntimeContainer) *pod.StateTerminated {
	t := &pod.StateTerminated{
		ExitCode:    int32(r.ExitCode),
		StartedAt:   r.StartedAt,
		FinishedAt:  r.FinishedAt,
		ContainerID: "containerd://" + r.ID,
		Message:     r.Message,
	}
	switch {
	case r.OOMKilled && r.ExitCode != 0:
		// (The flag is set by any OOM kill in the container's cgroup, a
		// child's too: a container that still exited 0 completed.)
		t.Reason = pod.ReasonOOMKilled
	case r.ExitCode == 0:
		t.Reason = pod.ReasonCompleted
	default:
		t.Reason = pod.ReasonError
	}
	if r.ExitCode > 128 && r.ExitCode < 160 {
		t.Signal = int32(r.ExitCode - 128)
	}
	return t
}

// condition returns a condition with the transition time carried over from
// prev while its status is unchanged, and records it in prev.
func condition(prev map[string]pod.Condition, typ string, ok bool, now time.Time, falseReason string) pod.Condition {
	c := pod.Condition{Type: typ, Status: "False", Reason: falseReason}
	if ok {
		c.Status, c.Reason = "True", ""
	}
	if old, seen := prev[typ]; seen && old.Status == c.Status {
		c.LastTransitionTime = old.LastTransitionTime
	} else {
		c.LastTransitionTime = now
	}
	if prev != nil {
		prev[typ] = c
	}
	return c
}

// withMessage gives a false readiness condition the kubelet's message
// naming the containers that are not ready (a failing readiness probe's
// output is in its Unhealthy event, as with the kubelet).
func withMessage(c pod.Condition, unready []string) pod.Condition {
	if c.Status == "False" && len(unready) > 0 {
		c.Message = "containers with unready status: [" + strings.Join(unready, " ") + "]"
	}
	return c
}

// startTime is when the pod's first container was created, or when tug
// first saw the pod.
func startTime(recs []pod.RuntimeContainer, firstSeen time.Time) *time.Time {
	t := firstSeen
	for _, r := range recs {
		if !r.CreatedAt.IsZero() && (t.IsZero() || r.CreatedAt.Before(t)) {
			t = r.CreatedAt
		}
	}
	if t.IsZero() {
		return nil
	}
	return &t
}

// backoffMessage is the kubelet's CrashLoopBackOff message.
func backoffMessage(d time.Duration, p *pod.Pod, name string) string {
	return fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", d.Round(time.Second), name, p.FullName())
}

// computeResources is the cpu and memory of l (nil if neither).
func computeResources(l pod.ResourceList) pod.ResourceList {
	var out pod.ResourceList
	for _, name := range []pod.ResourceName{pod.ResourceCPU, pod.ResourceMemory} {
		if q, ok := l[name]; ok {
			if out == nil {
				out = pod.ResourceList{}
			}
			out[name] = q
		}
	}
	return out
}
