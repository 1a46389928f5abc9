// Package podstatus owns a pod's status: computed from its manifest, its
// containers' records and what the sync loop noted (Compute, by the
// kubelet's rules: the phase, the state shown for a restarting container,
// the Initialized/ContainersReady/Ready conditions, tug's own DevicesReady
// and UpdateReady), and the status the API serves (Served): every pod with
// the conditions other components add, and every manifest file's state.
package podstatus

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"tug/internal/pod"
	"tug/internal/podplan"
)

// Notes is what the sync loop learned of a pod that its containers'
// records cannot say.
type Notes struct {
	// Waiting is why a container waits, by container name
	// (CrashLoopBackOff, ErrImagePull, ...).
	Waiting map[string]pod.StateWaiting
	// SyncErr is why the pod's last sync failed ("" when it did not).
	SyncErr string
	// Refused is why the node does not run the pod now (HostPortInUse,
	// OutOfpods).
	Refused pod.StateWaiting
	// Blocked is why admission refused the pod's current version ("" if
	// admitted).
	Blocked string
	// FailedAs is the pod's reason when that refusal fails it
	// (NodeAffinity, Taint), and Admitted whether a version of it was
	// admitted since tug started.
	FailedAs string
	Admitted bool
	// IP is the pod's address, once its sandbox is set up.
	IP string
	// Conditions are the pod's conditions as last computed, by type: the
	// transition times come from them. Compute drops UpdateReady from it
	// once no update is blocked.
	Conditions map[string]pod.Condition
	FirstSeen  time.Time
	// Evicted is set while the pod is evicted, with EvictedMessage the
	// eviction manager's message.
	Evicted        bool
	EvictedMessage string
	// Killed holds the probe messages of the containers a probe failure
	// stopped, by container ID.
	Killed map[string]string
	// Probes gives running containers' readiness and startup (nil: no
	// probes).
	Probes Prober
	// HasDevices: a container of the pod was given a device;
	// GoneDevices are those that are not present, sorted.
	HasDevices  bool
	GoneDevices []string
	// ResizeConds are the PodResizePending or PodResizeInProgress
	// conditions of the pod's last resize (none when it was applied).
	ResizeConds []pod.Condition
}

// Prober says what a running container's probes found.
type Prober interface {
	Ready(id string, c *pod.Container) bool
	Started(id string, c *pod.Container) bool
}

// Reasons of the pod and its conditions that the sync loop sets.
const (
	// ReasonEvicted is the reason of a pod the eviction manager evicted.
	ReasonEvicted = "Evicted"
	// ReasonDeviceUnavailable is the waiting reason of a container whose
	// device is gone and of the pod's False tug.io/DevicesReady condition.
	ReasonDeviceUnavailable = "DeviceUnavailable"
)

// FailureReason reports whether a waiting reason fails an update at once
// (ErrImagePull, ImagePullBackOff, ImagePullDeferred, ErrImageNeverPull,
// CreateContainerError, CreateContainerConfigError).
func FailureReason(reason string) bool { return failureReasons[reason] }

// failureReasons are the waiting reasons that fail an update at once.
var failureReasons = map[string]bool{
	pod.ReasonErrImagePull:               true,
	pod.ReasonImagePullBackOff:           true,
	pod.ReasonImagePullDeferred:          true,
	pod.ReasonErrImageNeverPull:          true,
	pod.ReasonCreateContainerError:       true,
	pod.ReasonCreateContainerConfigError: true,
}

// DevicesMessage is the DevicesReady condition's message for gone devices.
func DevicesMessage(gone []string) string {
	return "device " + strings.Join(gone, ", ") + " unavailable; the containers that use it are not restarted until it is back"
}

// Compute derives a pod's Kubernetes-shaped status from its manifest,
// its containers as the runtime reports them, and what the workers noted.
// It follows the kubelet's rules (getPhase, the container state shown for
// a restarting container, the Initialized/ContainersReady/Ready
// conditions). Pure: conditions' transition times come from prev, and the
// caller stores the returned conditions for the next call.
func Compute(p *pod.Pod, recs []pod.RuntimeContainer, n Notes, now time.Time) pod.Status {
	byName := podplan.GroupByName(recs)
	st := pod.Status{StartTime: startTime(recs, n.FirstSeen)}
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
		if w := n.Waiting[c.Name]; blocked == nil && sidecarOrApp && old.State == pod.RunRunning && failureReasons[w.Reason] {
			blocked = &blockedUpdate{container: c.Name, image: c.Image, waiting: w}
		}
	}

	initDone, initFailed := true, false
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		cs := containerStatus(c, byName[c.Name], podWaiting(n, byName[c.Name], n.Waiting[c.Name]), true)
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
		w := podWaiting(n, byName[c.Name], n.Waiting[c.Name])
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
	if n.SyncErr != "" {
		st.Reason, st.Message = "SyncError", n.SyncErr
	}
	if n.Refused.Reason != "" {
		st.Reason, st.Message = n.Refused.Reason, n.Refused.Message
	}
	if n.Blocked != "" {
		st.Reason, st.Message = pod.ReasonBlocked, n.Blocked
	}
	if n.FailedAs != "" && !n.Admitted {
		// Refused by node admission and never run: Failed, as the kubelet
		// leaves a static pod that does not fit the node.
		st.Phase, st.Reason = pod.PhaseFailed, n.FailedAs
	}
	if n.Evicted {
		st.Phase, st.Reason, st.Message = pod.PhaseFailed, ReasonEvicted, n.EvictedMessage
	}
	if n.IP != "" {
		st.PodIP, st.PodIPs = n.IP, []pod.PodIP{{IP: n.IP}}
	}

	allReady := ready == len(p.Spec.Containers)
	st.Conditions = []pod.Condition{
		condition(n.Conditions, pod.ConditionInitialized, initDone, now, "ContainersNotInitialized"),
		withMessage(condition(n.Conditions, pod.ConditionContainersReady, allReady, now, "ContainersNotReady"), unready),
		withMessage(condition(n.Conditions, pod.ConditionReady, allReady, now, "ContainersNotReady"), unready),
		condition(n.Conditions, pod.ConditionPodScheduled, true, now, ""),
	}
	if n.HasDevices {
		c := condition(n.Conditions, pod.ConditionDevicesReady, len(n.GoneDevices) == 0, now, ReasonDeviceUnavailable)
		if c.Status == "False" {
			c.Message = DevicesMessage(n.GoneDevices)
		}
		st.Conditions = append(st.Conditions, c)
	}
	st.Conditions = append(st.Conditions, n.ResizeConds...)
	if blocked != nil {
		c := condition(n.Conditions, pod.ConditionUpdateReady, false, now, blocked.waiting.Reason)
		c.Message = blocked.message()
		st.Conditions = append(st.Conditions, c)
	} else if n.Conditions != nil {
		delete(n.Conditions, pod.ConditionUpdateReady)
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

// Terminating is st, the status of a pod being removed since since,
// with its Ready condition False (reason PodTerminating) from then on: the
// pod no longer serves, whatever its containers' readiness said.
func Terminating(st pod.Status, since time.Time) pod.Status {
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

// TerminatingMeta is p's metadata with the deletion fields of a pod being
// removed since since.
func TerminatingMeta(p *pod.Pod, since time.Time) pod.ObjectMeta {
	m := p.Metadata
	at := since.UTC()
	grace := int64(p.GracePeriod() / time.Second)
	m.DeletionTimestamp, m.DeletionGracePeriodSeconds = &at, &grace
	return m
}

// jobOver reports whether every app container of a Job's pod has exited
// and will not be retried.
func jobOver(p *pod.Pod, byName map[string][]pod.RuntimeContainer) bool {
	return len(p.Spec.Containers) > 0 && podplan.AppsDone(p, byName)
}

// podWaiting is w, or, for a container with no record and no reason of
// its own, why the whole pod is not run: blocked by the admission policy,
// or refused (HostPortInUse, OutOfpods).
func podWaiting(n Notes, recs []pod.RuntimeContainer, w pod.StateWaiting) pod.StateWaiting {
	if w.Reason != "" || len(recs) != 0 {
		return w
	}
	switch {
	case n.FailedAs != "":
		return pod.StateWaiting{Reason: n.FailedAs, Message: "the pod does not match this node"}
	case n.Blocked != "":
		return pod.StateWaiting{Reason: pod.ReasonBlocked, Message: "the pod is blocked by the admission policy"}
	case n.Refused.Reason != "":
		return n.Refused
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

// probeStatus applies the probes' results to a container's status: a
// running container is ready and started as its probes say, and a
// container a probe killed shows why.
func probeStatus(n Notes, c *pod.Container, cs *pod.ContainerStatus, init bool) {
	for _, t := range []*pod.StateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
		if t != nil {
			if msg := n.Killed[strings.TrimPrefix(t.ContainerID, "containerd://")]; msg != "" {
				t.Message = msg
			}
		}
	}
	if n.Probes == nil || cs.State.Running == nil || (init && !c.IsSidecar()) {
		return
	}
	id := strings.TrimPrefix(cs.ContainerID, "containerd://")
	cs.Ready = n.Probes.Ready(id, c)
	if !init {
		started := n.Probes.Started(id, c)
		cs.Started = &started
	}
}
