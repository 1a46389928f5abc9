// Package podplan decides what a pod's sync does: which of its containers
// start, are kept, back off, wait for a device or an init container, stop,
// or go (Compute), from what the sync read (the pod, its containers'
// records, what tug noted, the time); what an evicted pod needs
// (Evicted); the order a removed pod's containers stop in (KillOrder); and
// when a crashed container may restart (CrashBackoff). They change nothing
// and call nothing that does, so table tests pin each decision; package
// reconcile carries the plans out, as the kubelet's SyncPod carries out
// computePodActions.
package podplan

import (
	"slices"
	"time"

	"tug/internal/pod"
)

// Facts is what a pod's plan is computed from besides the pod itself.
type Facts struct {
	// ByName holds the pod's containers' records by container name, oldest
	// first, as the runtime listed them.
	ByName map[string][]pod.RuntimeContainer
	// CgroupParent is the pod cgroup of the pod's sandbox: a running
	// container under another one moves (its QoS class changed).
	CgroupParent string
	// RestartAsked holds the IDs of the containers a restart was asked
	// for (tug restart).
	RestartAsked map[string]bool
	// GoneDevices holds, by container name, the devices of the container
	// that are gone.
	GoneDevices map[string][]string
	// HasDevices says a container of the pod was given a device.
	HasDevices bool
	// Due returns when an exited container's crash back-off ends.
	Due func(last *pod.RuntimeContainer) time.Time
	// Started reports whether a running container's startup probe has
	// passed; nil when tug runs no probes (every container has started).
	Started func(id string, c *pod.Container) bool
	Now     time.Time
}

// AddDevices fills f.GoneDevices and f.HasDevices from gone, which says
// which devices container c of p was given that are gone, and whether it
// was given any.
func (f *Facts) AddDevices(p *pod.Pod, gone func(p *pod.Pod, c *pod.Container) ([]string, bool)) {
	for _, list := range [][]pod.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range list {
			g, has := gone(p, &list[i])
			f.HasDevices = f.HasDevices || has
			if len(g) > 0 {
				if f.GoneDevices == nil {
					f.GoneDevices = map[string][]string{}
				}
				f.GoneDevices[list[i].Name] = g
			}
		}
	}
}

// Action is what one container needs.
type Action int

const (
	// Keep: it runs with its current spec; its health is checked.
	Keep Action = iota
	// Start: its next attempt starts (replacing the records of older
	// specs).
	Start
	// BackOff: it exited and restarts when its crash back-off ends.
	BackOff
	// WaitDevice: it waits for a device of its that is gone.
	WaitDevice
	// Done: it exited and does not start again (an init container
	// that succeeded, an app container its restart policy leaves).
	Done
	// Stop: a sidecar whose pod's app containers are done for good
	// stops, keeping its record.
	Stop
	// WaitExit: an init container runs from an earlier sync; the init
	// phase waits for its exit.
	WaitExit
	// Fail: an init container failed under restartPolicy Never: the
	// pod has failed, nothing more starts.
	Fail
)

var actionNames = [...]string{"keep", "start", "back-off", "wait-device", "done", "stop", "wait-exit", "fail"}

func (a Action) String() string { return actionNames[a] }

// Step is the plan for one container.
type Step struct {
	Container *pod.Container
	Init      bool // an init container (a sidecar too)
	// InInit: the Step is of the init phase, which it may block (a
	// running sidecar then keeps its notes).
	InInit bool
	Action Action
	// Why says what a start replaces: "new" (no record), "changed" (its
	// spec hash differs), "moved" (its pod cgroup changed), "asked" (a
	// restart was asked for), "restart" (its restart policy restarts it).
	Why string
	// Recs are the container's records (none for a new one, and none for
	// an app container when resetApps), and last the newest of them.
	Recs []pod.RuntimeContainer
	Last *pod.RuntimeContainer
	// Until is when a back-off ends.
	Until time.Time
	// Devices are the gone devices it waits for.
	Devices []string
	// Gate: a sidecar's startup probe has not passed yet; the init
	// containers after it wait (the sync looks again in a second).
	Gate bool
}

// Plan is what a pod's sync does, in order.
type Plan struct {
	// Remove names the containers no longer in the manifest: their
	// records go first.
	Remove []string
	// ResetApps: an init container's spec changed, so the app
	// containers go and the init phase runs again.
	ResetApps bool
	// Init are the init containers' steps, in order, up to the first
	// that blocks the others (one that runs to completion, waits or
	// failed); once the init phase is over, the sidecars' steps.
	Init []Step
	// InitDone: the init phase is over and the app containers run.
	InitDone bool
	// Apps are the app containers' steps when initDone.
	Apps []Step
}

// Compute computes the plan of p's sync from f. It is pure.
func Compute(p *pod.Pod, f Facts) Plan {
	var pl Plan
	wanted := map[string]bool{}
	for _, list := range [][]pod.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range list {
			wanted[c.Name] = true
		}
	}
	byName := make(map[string][]pod.RuntimeContainer, len(f.ByName))
	for name, recs := range f.ByName {
		if wanted[name] {
			byName[name] = recs
		} else {
			pl.Remove = append(pl.Remove, name)
		}
	}
	slices.Sort(pl.Remove)
	f.ByName = byName

	pl.Init, pl.InitDone, pl.ResetApps = planInit(p, f)
	if pl.ResetApps {
		for _, c := range p.Spec.Containers {
			delete(f.ByName, c.Name)
		}
	}
	if !pl.InitDone {
		return pl
	}
	for i := range p.Spec.Containers {
		pl.Apps = append(pl.Apps, planApp(p, &p.Spec.Containers[i], f))
	}
	return pl
}

// planInit plans the init phase: done at once without init containers;
// once app containers have started (and no init container changed), only
// the sidecars are kept running; otherwise each init container in order,
// up to the first that blocks the next.
func planInit(p *pod.Pod, f Facts) (steps []Step, done, resetApps bool) {
	if len(p.Spec.InitContainers) == 0 {
		return nil, true, false
	}
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		if last := Latest(f.ByName[c.Name]); last != nil && last.SpecHash != pod.ContainerHash(p, c) {
			resetApps = true
		}
	}
	appsStarted := false
	for _, c := range p.Spec.Containers {
		if len(f.ByName[c.Name]) > 0 {
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
		last := Latest(f.ByName[c.Name])
		st := Step{Container: c, Init: true, InInit: true, Recs: f.ByName[c.Name], Last: last}
		current := last != nil && last.SpecHash == pod.ContainerHash(p, c)
		if c.IsSidecar() {
			// Started in order, then left running: the next init
			// container starts once the sidecar runs (and its startup
			// probe, if any, has passed).
			switch {
			case current && last.State == pod.RunRunning:
				st.Action = Keep
				st.Gate = f.Started != nil && !f.Started(last.ID, c)
			case len(f.GoneDevices[c.Name]) > 0:
				st.Action, st.Devices = WaitDevice, f.GoneDevices[c.Name]
			case current && last.State == pod.RunExited && !f.RestartAsked[last.ID] && f.Due(last).After(f.Now):
				st.Action, st.Until = BackOff, f.Due(last)
			default:
				st.Action, st.Why = Start, startWhy(p, c, last, f)
				st.Gate = f.Started != nil && c.StartupProbe != nil
			}
			steps = append(steps, st)
			if (st.Action != Keep && st.Action != Start) || st.Gate {
				return steps, false, resetApps
			}
			continue
		}
		switch {
		case current && last.State == pod.RunExited && last.ExitCode == 0:
			st.Action = Done
		case current && last.State == pod.RunExited && p.Spec.RestartPolicy == pod.RestartNever:
			st.Action = Fail
		case current && last.State == pod.RunExited && f.Due(last).After(f.Now):
			st.Action, st.Until = BackOff, f.Due(last)
		case current && last.State == pod.RunRunning:
			st.Action = WaitExit
		case len(f.GoneDevices[c.Name]) > 0:
			st.Action, st.Devices = WaitDevice, f.GoneDevices[c.Name]
		default:
			st.Action, st.Why = Start, startWhy(p, c, last, f)
		}
		steps = append(steps, st)
		if st.Action != Done {
			return steps, false, resetApps
		}
	}
	return steps, true, resetApps
}

// planApp plans one app container: kept running with its current spec,
// restarted as its restart policy says once its back-off has passed, and
// waiting for a device that is gone whenever it would start.
func planApp(p *pod.Pod, c *pod.Container, f Facts) Step {
	last := Latest(f.ByName[c.Name])
	st := Step{Container: c, Recs: f.ByName[c.Name], Last: last}
	switch {
	case last == nil, last.SpecHash != pod.ContainerHash(p, c):
		// new, or changed: the start replaces the old container
	case last.State == pod.RunRunning && last.CgroupParent != "" && last.CgroupParent != f.CgroupParent:
		// The pod's QoS class changed with another container's
		// resources: this one still runs in the old class's cgroup.
	case last.State == pod.RunRunning:
		st.Action = Keep
		return st
	case last.State == pod.RunExited && f.RestartAsked[last.ID]:
		// stopped by a requested restart: it starts again at once
	case last.State == pod.RunExited && !RestartsIn(p, last):
		st.Action = Done
		return st
	case len(f.GoneDevices[c.Name]) > 0:
	case last.State == pod.RunExited && f.Due(last).After(f.Now):
		st.Action, st.Until = BackOff, f.Due(last)
		return st
	}
	if g := f.GoneDevices[c.Name]; len(g) > 0 {
		// Its device is gone: it waits for it, not for a back-off, and a
		// change of the devices syncs the pod again.
		st.Action, st.Devices = WaitDevice, g
		return st
	}
	st.Action, st.Why = Start, startWhy(p, c, last, f)
	return st
}

// planSidecar plans a sidecar init container once the init phase is over:
// restarted whatever its exit code (after its back-off), as a container of
// a restartPolicy Always pod, until the app containers are done for good
// (a Job's pod that completed), when it stops.
func planSidecar(p *pod.Pod, c *pod.Container, f Facts) Step {
	last := Latest(f.ByName[c.Name])
	st := Step{Container: c, Init: true, Recs: f.ByName[c.Name], Last: last}
	switch {
	case AppsDone(p, f.ByName):
		st.Action = Done
		if last != nil && last.State == pod.RunRunning {
			st.Action = Stop
		}
		return st
	case last == nil, last.SpecHash != pod.ContainerHash(p, c):
	case last.State == pod.RunRunning:
		st.Action = Keep
		return st
	case len(f.GoneDevices[c.Name]) > 0:
		st.Action, st.Devices = WaitDevice, f.GoneDevices[c.Name]
		return st
	case last.State == pod.RunExited && f.RestartAsked[last.ID]:
	case last.State == pod.RunExited && f.Due(last).After(f.Now):
		st.Action, st.Until = BackOff, f.Due(last)
		return st
	}
	st.Action, st.Why = Start, startWhy(p, c, last, f)
	return st
}

// startWhy says what the start of c replaces (see Step.Why).
func startWhy(p *pod.Pod, c *pod.Container, last *pod.RuntimeContainer, f Facts) string {
	switch {
	case last == nil:
		return "new"
	case last.SpecHash != pod.ContainerHash(p, c):
		return "changed"
	case last.State == pod.RunRunning:
		return "moved"
	case f.RestartAsked[last.ID]:
		return "asked"
	}
	return "restart"
}
