package reconcile

import (
	"errors"
	"sync"
	"time"

	"tug/internal/clock"
	"tug/internal/pod"
	"tug/internal/podstatus"
)

// statusNotes holds what the workers learned that the runtime cannot say: why a
// container is waiting (CrashLoopBackOff, ErrImagePull, ...), why a pod's
// sync fails, and when each pod condition last changed. Status reads them.
// It is safe for concurrent use.
type statusNotes struct {
	now  clock.Clock // nil: the system clock
	mu   sync.Mutex
	pods map[string]*podNotes
}

type podNotes struct {
	waiting    map[string]pod.StateWaiting // by container name
	syncErr    string
	refused    pod.StateWaiting         // why the pod is not run (HostPortInUse, OutOfpods)
	blocked    string                   // why admission refused the pod's current version ("" if admitted)
	failedAs   string                   // the pod's reason when that refusal fails it (NodeAffinity, Taint)
	admitted   *pod.Pod                 // the last version admission admitted, nil if none since tug started
	ip         string                   // the pod's address, once its sandbox is set up
	conditions map[string]pod.Condition // by type
	firstSeen  time.Time
	evicted    *evictedNote      // set while the pod is evicted
	killed     map[string]string // probe messages of the containers a probe failure stopped, by container ID
	// restartAsked holds the IDs of the containers a restart was asked
	// for (Loop.Restart), until their next attempt starts.
	restartAsked map[string]bool
	// askedAttempts counts, by container name, the attempts started
	// because a restart was asked for.
	askedAttempts map[string]int
	probes        podstatus.Prober // set by Status for computeStatus (nil: no ReadyHook)
	devices       devicesNote
	// resizeConds are the PodResizePending or PodResizeInProgress
	// conditions of the pod's last resize (none when it was applied).
	resizeConds []pod.Condition
}

// resize records the resize conditions of pod uid (nil: none), keeping
// the transition time of one that stays, and reports whether they
// changed.
func (n *statusNotes) resize(uid string, conds []pod.Condition) (changed bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	now := n.now.Now()
	pn := n.pod(uid, now)
	for i := range conds {
		c := &conds[i]
		c.LastTransitionTime = now
		for _, old := range pn.resizeConds {
			if old.Type == c.Type && old.Status == c.Status && old.Reason == c.Reason {
				c.LastTransitionTime = old.LastTransitionTime
				changed = changed || old.Message != c.Message
				break
			}
		}
	}
	changed = changed || len(conds) != len(pn.resizeConds) || (len(conds) > 0 && conds[0].Reason != pn.resizeConds[0].Reason)
	pn.resizeConds = conds
	return changed
}

// killedFor records that a failed probe stopped container id of pod uid.
func (n *statusNotes) killedFor(uid, id, msg string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	pn := n.pod(uid, n.now.Now())
	if pn.killed == nil {
		pn.killed = map[string]string{}
	}
	pn.killed[id] = msg
}

func (n *statusNotes) pod(uid string, now time.Time) *podNotes {
	if n.pods == nil {
		n.pods = map[string]*podNotes{}
	}
	p := n.pods[uid]
	if p == nil {
		p = &podNotes{waiting: map[string]pod.StateWaiting{}, conditions: map[string]pod.Condition{}, firstSeen: now}
		n.pods[uid] = p
	}
	return p
}

// wait records why container name of pod uid is waiting.
func (n *statusNotes) wait(uid, name, reason, message string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.pod(uid, n.now.Now()).waiting[name] = pod.StateWaiting{Reason: reason, Message: message}
}

// clear forgets why container name was waiting (it runs, or is being
// started) and returns the reason it had.
func (n *statusNotes) clear(uid, name string) (reason string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if p := n.pods[uid]; p != nil {
		reason = p.waiting[name].Reason
		delete(p.waiting, name)
	}
	return reason
}

// syncFailed records the pod-level error of the last sync ("" when it
// succeeded).
func (n *statusNotes) syncFailed(uid, msg string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.pod(uid, n.now.Now()).syncErr = msg
}

// refuse records why the pod is not run (a zero w: it may run) and reports
// whether the reason changed.
func (n *statusNotes) refuse(uid string, w pod.StateWaiting) (changed bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	pn := n.pod(uid, n.now.Now())
	changed = pn.refused.Reason != w.Reason
	pn.refused = w
	return changed
}

// podFailure is an admission refusal that fails the pod (phase Failed)
// with a reason of its own, as the kubelet's node admission does: a pod
// that does not match the node's labels or taints (policy.NodeMismatch),
// or that asks for more devices than are free (devices.OutOfResource).
type podFailure interface {
	error
	PodReason() string
}

// admission records admission's answer (err) for p and returns the version
// of the pod to run: p when admitted, else the last admitted version (nil if
// there is none). changed reports a change of the Blocked state or message.
func (n *statusNotes) admission(p *pod.Pod, err error) (run *pod.Pod, changed bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	pn := n.pod(p.Metadata.UID, n.now.Now())
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	changed = msg != pn.blocked
	pn.blocked = msg
	pn.failedAs = ""
	var r podFailure
	if errors.As(err, &r) {
		pn.failedAs = r.PodReason()
	}
	if err == nil {
		pn.admitted = p
	}
	return pn.admitted, changed
}

// devices records what the pod's last sync found of its devices and
// returns what the one before found.
func (n *statusNotes) devices(uid string, d devicesNote) (prev devicesNote) {
	n.mu.Lock()
	defer n.mu.Unlock()
	pn := n.pod(uid, n.now.Now())
	prev, pn.devices = pn.devices, d
	return prev
}

// address records the pod's IP.
func (n *statusNotes) address(uid, ip string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.pod(uid, n.now.Now()).ip = ip
}

// forget drops everything about the pod.
func (n *statusNotes) forget(uid string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.pods, uid)
}

// with runs f on the pod's notes under the lock (Status reads them and
// records condition transitions).
func (n *statusNotes) with(uid string, now time.Time, f func(p *podNotes)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	f(n.pod(uid, now))
}

// peek runs f on the pod's notes under the lock, or on empty notes (not
// kept) when the pod has none: the status of a pod being removed must not
// bring back the notes its kill forgot.
func (n *statusNotes) peek(uid string, f func(p *podNotes)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if p := n.pods[uid]; p != nil {
		f(p)
		return
	}
	f(&podNotes{})
}

// forStatus is what podstatus.Compute needs of n. Its Conditions is n's
// map: Compute's change to it is kept.
func (n podNotes) forStatus() podstatus.Notes {
	s := podstatus.Notes{
		Waiting: n.waiting, SyncErr: n.syncErr, Refused: n.refused, Blocked: n.blocked,
		FailedAs: n.failedAs, Admitted: n.admitted != nil, IP: n.ip, Conditions: n.conditions,
		FirstSeen: n.firstSeen, Killed: n.killed, HasDevices: n.devices.has, GoneDevices: n.devices.gone,
		ResizeConds: n.resizeConds,
	}
	if n.probes != nil {
		s.Probes = n.probes
	}
	if n.evicted != nil {
		s.Evicted, s.EvictedMessage = true, n.evicted.message
	}
	return s
}

// computeStatus is p's status from its records recs and the notes n.
func computeStatus(p *pod.Pod, recs []pod.RuntimeContainer, n podNotes, now time.Time) pod.Status {
	return podstatus.Compute(p, recs, n.forStatus(), now)
}
