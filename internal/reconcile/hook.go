package reconcile

import (
	"context"
	"time"

	"tug/internal/pod"
	"tug/internal/podplan"
	"tug/internal/podstatus"
)

// A Hook is an optional part of every pod's sync: the probes, the
// containers' lifecycle handlers, the devices, the image pre-pull, the image
// repair, the eviction manager's admission, the in-place resize. Config.Hooks lists them; at each
// stage of a sync the hooks that implement that stage's interface (below)
// run in the order of the list, and a hook implements only the stages it
// takes part in. A stage may run again for the same pod and container (a
// retried sync, a tug restart), so every stage is idempotent. The model is
// Nomad's task-runner hooks; the sync itself (sync.go) decides what the
// outcome of a stage does to the pod: its events, its waiting reasons, a
// stop.
type Hook interface {
	// Name names the hook in logs.
	Name() string
}

// A FactsHook adds what it knows to the facts a pod's plan is computed
// from (podplan.Facts): the devices that are gone, whether a startup probe
// succeeded.
type FactsHook interface {
	Hook
	Facts(p *pod.Pod, f *podplan.Facts)
}

// A ListedHook is told of a pod's containers once its sandbox is ready and
// they are listed, before the plan is made (the prober arms the probes of
// the running ones and drops those of the others).
type ListedHook interface {
	Hook
	Listed(p *pod.Pod, recs []pod.RuntimeContainer, sb pod.Sandbox)
}

// A HealthHook says whether a running container the plan keeps is to be
// restarted: msg says why ("Liveness probe failed: ..."), grace is the stop
// grace period it asks for (nil: the pod's).
type HealthHook interface {
	Hook
	Unhealthy(id string) (msg string, grace *int64, bad bool)
}

// A ReadyHook says whether a running container is ready and has started,
// for the pod's status; a container is ready when every ReadyHook says so.
type ReadyHook interface {
	Hook
	Ready(id string, c *pod.Container) bool
	Started(id string, c *pod.Container) bool
}

// A PrestartHook runs before container c starts, while replaced (the
// records it replaces) still run: an error leaves them running, and is the
// start's failure (the image pre-pull: an update to an image that cannot be
// pulled keeps the old container serving).
type PrestartHook interface {
	Hook
	Prestart(ctx context.Context, p *pod.Pod, c *pod.Container, replaced []pod.RuntimeContainer) error
}

// A StartFailedHook answers a start of c that failed with err; retry says
// it mended the cause and the start is to be tried again at once (the
// image repair).
type StartFailedHook interface {
	Hook
	StartFailed(ctx context.Context, p *pod.Pod, c *pod.Container, err error) (retry bool)
}

// A PoststartHook runs once container id of c has started (its postStart
// handler), under a context that a newer version of the pod cancels. An
// error stops the container, and becomes its waiting reason
// PostStartHookError.
type PoststartHook interface {
	Hook
	Poststart(ctx context.Context, p *pod.Pod, c *pod.Container, id string, sb pod.Sandbox) error
}

// A PrestopHook runs before running container id of c is sent its stop
// signal (its preStop handler); ctx ends with the stop's grace period, and
// what the hooks used of it is not given to the signal. sb returns the
// pod's sandbox (looked up when first called). ran says the hook had
// something to run; an error is reported and the stop goes on.
type PrestopHook interface {
	Hook
	Prestop(ctx context.Context, p *pod.Pod, c *pod.Container, id string, sb func() pod.Sandbox) (ran bool, err error)
}

// A RemovedHook is told that the pod with this UID is being removed.
type RemovedHook interface {
	Hook
	Removed(uid string)
}

// A ReadmitHook says whether an evicted pod may start again now; when not,
// message says which node condition holds it (the eviction manager).
type ReadmitHook interface {
	Hook
	Readmit(p *pod.Pod, bestEffort bool) (ok bool, message string)
}

// hooks is Config.Hooks sorted by stage, each stage in the order given.
type hooks struct {
	facts     []FactsHook
	listed    []ListedHook
	health    []HealthHook
	ready     []ReadyHook
	prestart  []PrestartHook
	failed    []StartFailedHook
	poststart []PoststartHook
	prestop   []PrestopHook
	removed   []RemovedHook
	readmits  []ReadmitHook
	resize    []ResizeHook
}

// sortHooks sorts list by the stages each hook implements.
func sortHooks(list []Hook) hooks {
	return hooks{
		facts:     stage[FactsHook](list),
		listed:    stage[ListedHook](list),
		health:    stage[HealthHook](list),
		ready:     stage[ReadyHook](list),
		prestart:  stage[PrestartHook](list),
		failed:    stage[StartFailedHook](list),
		poststart: stage[PoststartHook](list),
		prestop:   stage[PrestopHook](list),
		removed:   stage[RemovedHook](list),
		readmits:  stage[ReadmitHook](list),
		resize:    stage[ResizeHook](list),
	}
}

// stage returns the hooks of list that implement stage T, in order.
func stage[T Hook](list []Hook) []T {
	var out []T
	for _, k := range list {
		if x, ok := k.(T); ok {
			out = append(out, x)
		}
	}
	return out
}

// Ready reports whether every ReadyHook says running container id is
// ready (true with none): the podstatus.Prober of the pod's status.
func (h hooks) Ready(id string, c *pod.Container) bool {
	for _, k := range h.ready {
		if !k.Ready(id, c) {
			return false
		}
	}
	return true
}

// Started reports whether every ReadyHook says container id has started.
func (h hooks) Started(id string, c *pod.Container) bool {
	for _, k := range h.ready {
		if !k.Started(id, c) {
			return false
		}
	}
	return true
}

// status is what the pod's status asks of readiness: nil without a
// ReadyHook (podstatus then leaves Started unset, as for a node without
// probes).
func (h hooks) status() podstatus.Prober {
	if len(h.ready) == 0 {
		return nil
	}
	return h
}

// unhealthy returns the first HealthHook's verdict that container id is
// to be restarted.
func (h hooks) unhealthy(id string) (msg string, grace *int64, bad bool) {
	for _, k := range h.health {
		if msg, grace, bad = k.Unhealthy(id); bad {
			return msg, grace, true
		}
	}
	return "", nil, false
}

// readmit asks every ReadmitHook whether evicted pod p may start again; the
// first that refuses says why.
func (h hooks) readmit(p *pod.Pod, bestEffort bool) (bool, string) {
	for _, k := range h.readmits {
		if ok, msg := k.Readmit(p, bestEffort); !ok {
			return false, msg
		}
	}
	return true, ""
}

// prestopTime runs c's PrestopHooks within grace and returns what is left
// of grace for the stop signal: after a hook that ran, never less than
// minStopGrace (as the kubelet gives). A failed hook is passed to failed
// and the others still run.
func (h hooks) prestopTime(ctx context.Context, now func() time.Time, p *pod.Pod, c *pod.Container, id string, sb func() pod.Sandbox, grace time.Duration, failed func(error)) time.Duration {
	if len(h.prestop) == 0 || grace <= 0 {
		return grace
	}
	start := now()
	hctx, cancel := context.WithTimeout(ctx, grace)
	defer cancel()
	any := false
	for _, k := range h.prestop {
		ran, err := k.Prestop(hctx, p, c, id, sb)
		if err != nil {
			failed(err)
		}
		any = any || ran
	}
	if !any {
		return grace
	}
	return max(grace-now().Sub(start), minStopGrace)
}
