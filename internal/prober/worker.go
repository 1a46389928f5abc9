package prober

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"tug/internal/pod"
)

// worker runs one probe of one container every periodSeconds, with the
// kubelet's semantics (pkg/kubelet/prober/worker.go): nothing before
// initialDelaySeconds after the container started; liveness and readiness
// wait for the startup probe; a result counts once it repeats
// successThreshold (success) or failureThreshold (failure) times in a row;
// a startup probe stops once it succeeded; a failed liveness or startup
// probe stops probing (the container is restarted, and its successor gets
// workers of its own).
type worker struct {
	m         *Manager
	id        string // container ID
	name      string // container name
	kind      Kind
	probe     *pod.Probe
	startedAt time.Time
	target    atomic.Pointer[Target]
	cancel    context.CancelFunc

	last Result
	run  int32 // how many times in a row last was seen
}

// newWorker starts a worker for probe of container r. Called with m.mu
// held.
func (m *Manager) newWorker(r pod.RuntimeContainer, st *container, kind Kind, probe *pod.Probe, t Target) *worker {
	ctx, cancel := context.WithCancel(m.base)
	w := &worker{m: m, id: r.ID, name: st.name, kind: kind, probe: probe, startedAt: r.StartedAt, cancel: cancel}
	w.target.Store(&t)
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		w.loop(ctx)
	}()
	return w
}

func (w *worker) period() time.Duration { return time.Duration(w.probe.PeriodSeconds) * time.Second }

func (w *worker) loop(ctx context.Context) {
	period := w.period()
	// A container that ran before this worker (tug restarted, or the
	// probe changed) is probed after a random part of the period, so that
	// a restarted tug does not probe every container at once.
	first := time.Duration(0)
	if w.startedAt.Before(w.m.started) {
		first = jitter(period)
	}
	timer := time.NewTimer(first)
	defer timer.Stop()
	due := w.m.now.Now().Add(first)
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		if !w.doProbe(ctx, due) {
			return
		}
		due = due.Add(period)
		if now := w.m.now.Now(); due.Before(now) {
			due = now // fell behind (a probe longer than its period): no burst
		}
		timer.Reset(due.Sub(w.m.now.Now()))
	}
}

// doProbe probes once (when it is time to) and reports whether to go on.
func (w *worker) doProbe(ctx context.Context, due time.Time) bool {
	now := w.m.now.Now()
	if w.kind != Startup && !w.m.isStarted(w) {
		return true // liveness and readiness wait for the startup probe
	}
	if w.kind == Startup && w.m.isStarted(w) {
		return false
	}
	if now.Sub(w.startedAt) < time.Duration(w.probe.InitialDelaySeconds)*time.Second {
		return true
	}
	t := w.target.Load()
	timeout := time.Duration(w.probe.TimeoutSeconds) * time.Second
	res, msg, err := Run(ctx, w.probe.Handler(), *t, timeout)
	if ctx.Err() != nil {
		return false // dropped while probing: the result means nothing
	}
	p := w.m.podOf(w)
	w.m.metrics.observe(p, w.name, w.kind, w.probe.Handler().Kind(), res, w.m.now.Now().Sub(now), w.m.now.Now().Sub(due))
	if err != nil {
		if w.m.cfg.Log != nil {
			w.m.cfg.Log.Warn("probe error", "pod", fullName(p), "container", w.name, "probe", string(w.kind), "err", err)
		}
		return true // not counted, as the kubelet throws away errored probes
	}
	if res == Failure && p != nil && w.m.cfg.Events != nil {
		w.m.cfg.Events.Event(p, w.name, "Warning", "Unhealthy", fmt.Sprintf("%s probe failed: %s", w.kind, msg))
	}
	if res == w.last {
		w.run++
	} else {
		w.last, w.run = res, 1
	}
	if (res == Failure && w.run < w.probe.FailureThreshold) || (res == Success && w.run < w.probe.SuccessThreshold) {
		return true
	}
	if w.m.record(w, res, msg) {
		if p != nil && w.m.cfg.Events != nil {
			w.m.cfg.Events.Event(p, w.name, "Normal", "Killing", fmt.Sprintf("Container %s failed %s probe, will be restarted", w.name, lower(w.kind)))
		}
		if w.m.cfg.Log != nil {
			w.m.cfg.Log.Info("probe failed: restarting the container", "pod", fullName(p), "container", w.name, "probe", string(w.kind), "err", msg)
		}
		if w.m.cfg.Notify != nil && p != nil {
			w.m.cfg.Notify(p.Metadata.UID)
		}
		return false
	}
	return !(w.kind == Startup && res == Success)
}

func lower(k Kind) string {
	switch k {
	case Liveness:
		return "liveness"
	case Readiness:
		return "readiness"
	}
	return "startup"
}

func fullName(p *pod.Pod) string {
	if p == nil {
		return ""
	}
	return p.FullName()
}
