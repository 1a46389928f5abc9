package reconcile

import (
	"slices"
	"time"

	"tug/internal/pod"
)

// A pod's sync is planned, then carried out. planPod decides from what the
// sync has read (the pod, its containers' records, what tug noted, the
// time) what each container needs; it changes nothing and calls nothing
// that does, so a table test pins each decision. syncPod then acts on the
// plan: it starts, stops and waits for containers, and notes why one waits.

// podFacts is what a pod's plan is computed from besides the pod itself.
type podFacts struct {
	// byName holds the pod's containers' records by container name, oldest
	// first, as the runtime listed them.
	byName map[string][]pod.RuntimeContainer
	// cgroupParent is the pod cgroup of the pod's sandbox: a running
	// container under another one moves (its QoS class changed).
	cgroupParent string
	// restartAsked holds the IDs of the containers a restart was asked
	// for (tug restart).
	restartAsked map[string]bool
	// goneDevices holds, by container name, the devices of the container
	// that are gone.
	goneDevices map[string][]string
	// due returns when an exited container's crash back-off ends.
	due func(last *pod.RuntimeContainer) time.Time
	// started reports whether a running container's startup probe has
	// passed; nil when tug runs no probes (every container has started).
	started func(id string, c *pod.Container) bool
	now     time.Time
}

// action is what one container needs.
type action int

const (
	// actKeep: it runs with its current spec; its health is checked.
	actKeep action = iota
	// actStart: its next attempt starts (replacing the records of older
	// specs).
	actStart
	// actBackOff: it exited and restarts when its crash back-off ends.
	actBackOff
	// actWaitDevice: it waits for a device of its that is gone.
	actWaitDevice
	// actDone: it exited and does not start again (an init container
	// that succeeded, an app container its restart policy leaves).
	actDone
	// actStop: a sidecar whose pod's app containers are done for good
	// stops, keeping its record.
	actStop
	// actWaitExit: an init container runs from an earlier sync; the init
	// phase waits for its exit.
	actWaitExit
	// actFail: an init container failed under restartPolicy Never: the
	// pod has failed, nothing more starts.
	actFail
)

var actionNames = [...]string{"keep", "start", "back-off", "wait-device", "done", "stop", "wait-exit", "fail"}

func (a action) String() string { return actionNames[a] }

// step is the plan for one container.
type step struct {
	c    *pod.Container
	init bool // an init container (a sidecar too)
	// inInit: the step is of the init phase, which it may block (a
	// running sidecar then keeps its notes).
	inInit bool
	action action
	// why says what a start replaces: "new" (no record), "changed" (its
	// spec hash differs), "moved" (its pod cgroup changed), "asked" (a
	// restart was asked for), "restart" (its restart policy restarts it).
	why string
	// recs are the container's records (none for a new one, and none for
	// an app container when resetApps), and last the newest of them.
	recs []pod.RuntimeContainer
	last *pod.RuntimeContainer
	// until is when a back-off ends.
	until time.Time
	// devices are the gone devices it waits for.
	devices []string
	// gate: a sidecar's startup probe has not passed yet; the init
	// containers after it wait (the sync looks again in a second).
	gate bool
}

// podPlan is what a pod's sync does, in order.
type podPlan struct {
	// remove names the containers no longer in the manifest: their
	// records go first.
	remove []string
	// resetApps: an init container's spec changed, so the app
	// containers go and the init phase runs again.
	resetApps bool
	// init are the init containers' steps, in order, up to the first
	// that blocks the others (one that runs to completion, waits or
	// failed); once the init phase is over, the sidecars' steps.
	init []step
	// initDone: the init phase is over and the app containers run.
	initDone bool
	// apps are the app containers' steps when initDone.
	apps []step
}

// planPod computes the plan of p's sync from f. It is pure.
func planPod(p *pod.Pod, f podFacts) podPlan {
	var pl podPlan
	wanted := map[string]bool{}
	for _, list := range [][]pod.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range list {
			wanted[c.Name] = true
		}
	}
	byName := make(map[string][]pod.RuntimeContainer, len(f.byName))
	for name, recs := range f.byName {
		if wanted[name] {
			byName[name] = recs
		} else {
			pl.remove = append(pl.remove, name)
		}
	}
	slices.Sort(pl.remove)
	f.byName = byName

	pl.init, pl.initDone, pl.resetApps = planInit(p, f)
	if pl.resetApps {
		for _, c := range p.Spec.Containers {
			delete(f.byName, c.Name)
		}
	}
	if !pl.initDone {
		return pl
	}
	for i := range p.Spec.Containers {
		pl.apps = append(pl.apps, planApp(p, &p.Spec.Containers[i], f))
	}
	return pl
}

// planInit plans the init phase: done at once without init containers;
// once app containers have started (and no init container changed), only
// the sidecars are kept running; otherwise each init container in order,
// up to the first that blocks the next.
func planInit(p *pod.Pod, f podFacts) (steps []step, done, resetApps bool) {
	if len(p.Spec.InitContainers) == 0 {
		return nil, true, false
	}
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		if last := latest(f.byName[c.Name]); last != nil && last.SpecHash != pod.ContainerHash(p, c) {
			resetApps = true
		}
	}
	appsStarted := false
	for _, c := range p.Spec.Containers {
		if len(f.byName[c.Name]) > 0 {
			appsStarted = true
		}
	}
	if appsStarted && !resetApps {
		// The init phase is over; its sidecars stay running.
		for i := range p.Spec.InitContainers {
			if c := &p.Spec.InitContainers[i]; c.IsSidecar() {
				steps = append(steps, planSidecar(p, c, f))
			}
		}
		return steps, true, false
	}
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		last := latest(f.byName[c.Name])
		st := step{c: c, init: true, inInit: true, recs: f.byName[c.Name], last: last}
		current := last != nil && last.SpecHash == pod.ContainerHash(p, c)
		if c.IsSidecar() {
			// Started in order, then left running: the next init
			// container starts once the sidecar runs (and its startup
			// probe, if any, has passed).
			switch {
			case current && last.State == pod.RunRunning:
				st.action = actKeep
				st.gate = f.started != nil && !f.started(last.ID, c)
			case len(f.goneDevices[c.Name]) > 0:
				st.action, st.devices = actWaitDevice, f.goneDevices[c.Name]
			case current && last.State == pod.RunExited && !f.restartAsked[last.ID] && f.due(last).After(f.now):
				st.action, st.until = actBackOff, f.due(last)
			default:
				st.action, st.why = actStart, startWhy(p, c, last, f)
				st.gate = f.started != nil && c.StartupProbe != nil
			}
			steps = append(steps, st)
			if (st.action != actKeep && st.action != actStart) || st.gate {
				return steps, false, resetApps
			}
			continue
		}
		switch {
		case current && last.State == pod.RunExited && last.ExitCode == 0:
			st.action = actDone
		case current && last.State == pod.RunExited && p.Spec.RestartPolicy == pod.RestartNever:
			st.action = actFail
		case current && last.State == pod.RunExited && f.due(last).After(f.now):
			st.action, st.until = actBackOff, f.due(last)
		case current && last.State == pod.RunRunning:
			st.action = actWaitExit
		case len(f.goneDevices[c.Name]) > 0:
			st.action, st.devices = actWaitDevice, f.goneDevices[c.Name]
		default:
			st.action, st.why = actStart, startWhy(p, c, last, f)
		}
		steps = append(steps, st)
		if st.action != actDone {
			return steps, false, resetApps
		}
	}
	return steps, true, resetApps
}

// planApp plans one app container: kept running with its current spec,
// restarted as its restart policy says once its back-off has passed, and
// waiting for a device that is gone whenever it would start.
func planApp(p *pod.Pod, c *pod.Container, f podFacts) step {
	last := latest(f.byName[c.Name])
	st := step{c: c, recs: f.byName[c.Name], last: last}
	switch {
	case last == nil, last.SpecHash != pod.ContainerHash(p, c):
		// new, or changed: the start replaces the old container
	case last.State == pod.RunRunning && last.CgroupParent != "" && last.CgroupParent != f.cgroupParent:
		// The pod's QoS class changed with another container's
		// resources: this one still runs in the old class's cgroup.
	case last.State == pod.RunRunning:
		st.action = actKeep
		return st
	case last.State == pod.RunExited && f.restartAsked[last.ID]:
		// stopped by a requested restart: it starts again at once
	case last.State == pod.RunExited && !restartsIn(p, last):
		st.action = actDone
		return st
	case len(f.goneDevices[c.Name]) > 0:
	case last.State == pod.RunExited && f.due(last).After(f.now):
		st.action, st.until = actBackOff, f.due(last)
		return st
	}
	if g := f.goneDevices[c.Name]; len(g) > 0 {
		// Its device is gone: it waits for it, not for a back-off, and a
		// change of the devices syncs the pod again.
		st.action, st.devices = actWaitDevice, g
		return st
	}
	st.action, st.why = actStart, startWhy(p, c, last, f)
	return st
}

// planSidecar plans a sidecar init container once the init phase is over:
// restarted whatever its exit code (after its back-off), as a container of
// a restartPolicy Always pod, until the app containers are done for good
// (a Job's pod that completed), when it stops.
func planSidecar(p *pod.Pod, c *pod.Container, f podFacts) step {
	last := latest(f.byName[c.Name])
	st := step{c: c, init: true, recs: f.byName[c.Name], last: last}
	switch {
	case appsDone(p, f.byName):
		st.action = actDone
		if last != nil && last.State == pod.RunRunning {
			st.action = actStop
		}
		return st
	case last == nil, last.SpecHash != pod.ContainerHash(p, c):
	case last.State == pod.RunRunning:
		st.action = actKeep
		return st
	case len(f.goneDevices[c.Name]) > 0:
		st.action, st.devices = actWaitDevice, f.goneDevices[c.Name]
		return st
	case last.State == pod.RunExited && f.restartAsked[last.ID]:
	case last.State == pod.RunExited && f.due(last).After(f.now):
		st.action, st.until = actBackOff, f.due(last)
		return st
	}
	st.action, st.why = actStart, startWhy(p, c, last, f)
	return st
}

// startWhy says what the start of c replaces (see step.why).
func startWhy(p *pod.Pod, c *pod.Container, last *pod.RuntimeContainer, f podFacts) string {
	switch {
	case last == nil:
		return "new"
	case last.SpecHash != pod.ContainerHash(p, c):
		return "changed"
	case last.State == pod.RunRunning:
		return "moved"
	case f.restartAsked[last.ID]:
		return "asked"
	}
	return "restart"
}
