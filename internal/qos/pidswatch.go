package qos

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"tug/internal/pod"
)

// PidsWatch watches each pod's process limit (the pod cgroup's pids.max,
// --pod-max-pids) and reports the pods the kernel refused a fork or clone
// because they held it: a Warning event PIDLimitReached, a log line when a
// pod reaches its limit, and the pod condition PIDLimitReached (with that
// status reason) while the pod's cgroup counts refused forks. The kubelet
// reports nothing of the kind; without it a pod at its limit shows Running
// while its processes fail with EAGAIN. The count lives in the cgroup, so
// it starts again from 0 when the pod's cgroup is created again. Safe for
// concurrent use.
type PidsWatch struct {
	pods    interface{ Pods() []*pod.Pod }
	cgroups PidsReader
	rec     EventRecorder
	log     *slog.Logger
	period  time.Duration // how often the cgroups are read

	mu    sync.Mutex
	state map[string]pidsState // by pod UID; only pods that reached their limit
}

// PidsReader reads a pod's process limit (the Manager does).
type PidsReader interface {
	PodPidsLimit(p *pod.Pod) (PidsLimit, error)
}

// EventRecorder records an event about a pod.
type EventRecorder interface {
	Event(p *pod.Pod, container, eventType, reason, message string)
}

// NewPidsWatch returns a watch that reads the limits of pods' cgroups
// every period.
func NewPidsWatch(pods interface{ Pods() []*pod.Pod }, cgroups PidsReader, rec EventRecorder, log *slog.Logger, period time.Duration) *PidsWatch {
	return &PidsWatch{pods: pods, cgroups: cgroups, rec: rec, log: log, period: period, state: map[string]pidsState{}}
}

// pidsState is what the pod cgroup said when it last counted more
// refused forks.
type pidsState struct {
	limit, refused int64
	since          time.Time
}

// Run reads every pod's pids.events each period until ctx is done.
func (w *PidsWatch) Run(ctx context.Context) error {
	t := time.NewTicker(w.period)
	defer t.Stop()
	for {
		w.check()
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// check reads the limit of every pod once.
func (w *PidsWatch) check() {
	pods := w.pods.Pods()
	seen := make(map[string]bool, len(pods))
	for _, p := range pods {
		uid := p.Metadata.UID
		seen[uid] = true
		l, err := w.cgroups.PodPidsLimit(p)
		if errors.Is(err, ErrMissingController) {
			return // no pids controller: no limit to reach
		}
		if err != nil || l.Max < 0 {
			continue // no cgroup (yet), or no limit
		}
		w.mu.Lock()
		old, had := w.state[uid]
		at := l.Refused > 0
		fresh := at && (!had || l.Refused < old.refused) // at its limit, or again in a new cgroup
		grew := at && (fresh || l.Refused > old.refused)
		switch {
		case !at:
			delete(w.state, uid)
		case fresh:
			w.state[uid] = pidsState{limit: l.Max, refused: l.Refused, since: time.Now()}
		case grew:
			old.limit, old.refused = l.Max, l.Refused
			w.state[uid] = old
		}
		w.mu.Unlock()
		if fresh {
			w.log.Warn("pod reached its process limit", "pod", p.FullName(), "uid", uid, "limit", l.Max, "refused", l.Refused)
		}
		if grew {
			w.rec.Event(p, "", "Warning", pod.ReasonPIDLimitReached,
				fmt.Sprintf("the pod reached its process limit of %d (pids.max): forks and clones fail", l.Max))
		}
	}
	w.mu.Lock()
	for uid := range w.state {
		if !seen[uid] {
			delete(w.state, uid)
		}
	}
	w.mu.Unlock()
}

// Condition returns the PIDLimitReached condition of a pod whose cgroup
// has counted refused forks, nil for any other pod.
func (w *PidsWatch) Condition(p *pod.Pod) *pod.Condition {
	w.mu.Lock()
	s, ok := w.state[p.Metadata.UID]
	w.mu.Unlock()
	if !ok {
		return nil
	}
	return &pod.Condition{Type: pod.ConditionPIDLimitReached, Status: "True", LastTransitionTime: s.since,
		Reason: pod.ReasonPIDLimitReached,
		Message: fmt.Sprintf("the kernel refused %d forks or clones: the pod holds its process limit of %d (pids.max, --pod-max-pids)",
			s.refused, s.limit)}
}
