package reconcile

import (
	"errors"
	"fmt"

	"tug/internal/pod"
	"tug/internal/podplan"
)

// ErrNotRunning: a restart was asked for a container that does not run.
var ErrNotRunning = errors.New("reconcile: container not running")

// restartMessage is the message of the Killing event and of the
// terminated state of a container stopped by a requested restart.
const restartMessage = "restart requested by tug restart"

// Restart asks for the named containers of pod uid, each running, to be
// restarted as a failed liveness probe restarts a container: the next
// sync of the pod stops each one with the pod's grace period (its preStop
// hook first), records a Killing event, and starts it again at once as a
// new attempt (restartCount + 1), whatever its restart policy and crash
// back-off. It returns once the request is noted and the pod's sync asked
// for; an error wraps ErrNotRunning when a container does not run (then
// nothing is asked). The attempts it causes are not restarts to the
// rollout controller (see Progress). Safe for concurrent use.
//
// The request is kept in memory: a tug stopped between the stop and the
// start leaves the exited container to its restart policy. The sync is
// asked for as Resync asks: when the loop has many pending, the pod's next
// periodic sync (--sync-frequency) does the restart.
func (l *Loop) Restart(uid string, containers []string) error {
	var byName map[string][]pod.RuntimeContainer
	if l.cfg.Cache != nil {
		byName = podplan.GroupByName(l.cfg.Cache.PodContainers(uid))
	}
	ids := make([]string, 0, len(containers))
	for _, name := range containers {
		last := podplan.Latest(byName[name])
		if last == nil || last.State != pod.RunRunning {
			return fmt.Errorf("container %s is not running: %w", name, ErrNotRunning)
		}
		ids = append(ids, last.ID)
	}
	for _, id := range ids {
		l.notes.requestRestart(uid, id)
	}
	l.Resync(uid)
	return nil
}

// requestRestart notes that running container id of pod uid is to be
// restarted.
func (n *statusNotes) requestRestart(uid, id string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	pn := n.pod(uid, n.now.Now())
	if pn.restartAsked == nil {
		pn.restartAsked = map[string]bool{}
	}
	pn.restartAsked[id] = true
}

// restartRequested reports whether a restart of container id of pod uid
// was asked for and its next attempt has not started yet.
func (n *statusNotes) restartRequested(uid, id string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	pn := n.pods[uid]
	return pn != nil && pn.restartAsked[id]
}

// restarted notes that the attempt after container prev (named name) of
// pod uid has started: when a restart of prev was asked for, the request
// is done and the attempt counts as asked for.
func (n *statusNotes) restarted(uid, name, prev string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	pn := n.pods[uid]
	if pn == nil || !pn.restartAsked[prev] {
		return
	}
	delete(pn.restartAsked, prev)
	if pn.askedAttempts == nil {
		pn.askedAttempts = map[string]int{}
	}
	pn.askedAttempts[name]++
}
