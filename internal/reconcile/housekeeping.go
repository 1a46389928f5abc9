package reconcile

import (
	"context"
	"sync"
	"time"

	"tug/internal/pod"
)

// housekeeping removes what belongs to pods that no source has any more:
// containers found by label (after a tug restart, say, the manifest was
// deleted while tug was down) and namespaces left by a crash half-way
// through setting a pod up. A pod is only removed once its source has
// reported, so a source that is slow at start (a URL that is down) never
// loses its pods. It runs in Run's goroutine.
func (l *Loop) housekeeping(ctx context.Context, wg *sync.WaitGroup) {
	now := l.now()
	for uid, at := range l.killed {
		if now.Sub(at) > time.Minute {
			delete(l.killed, uid)
		}
	}
	seen := map[string]bool{}
	for _, c := range l.cfg.Cache.All() {
		seen[c.PodUID] = true
		if l.workers[c.PodUID] != nil || !l.killed[c.PodUID].IsZero() {
			continue
		}
		ready, wanted := l.cfg.Desired.Owns(c.PodSource, c.PodUID)
		if !ready || wanted {
			continue
		}
		p := orphan(c)
		l.cfg.Log.Info("removing pod that no source has", "pod", p.FullName(), "uid", c.PodUID, "source", c.PodSource)
		l.killed[c.PodUID] = now
		l.start(ctx, wg, p).kill(p)
	}
	uids, err := l.cfg.Sandbox.List()
	if err != nil {
		l.cfg.Log.Warn("housekeeping: list namespaces", "err", err)
		return
	}
	for _, uid := range uids {
		if seen[uid] || l.workers[uid] != nil {
			continue
		}
		if err := l.cfg.Sandbox.RemoveNamespaces(ctx, uid); err != nil {
			l.cfg.Log.Warn("housekeeping: remove orphaned namespaces", "uid", uid, "err", err)
		}
	}
}

// orphan rebuilds, from a container's labels, as much of its pod as
// removing it needs.
func orphan(c pod.RuntimeContainer) *pod.Pod {
	p := &pod.Pod{APIVersion: "v1", Kind: "Pod"}
	p.Metadata = pod.ObjectMeta{Name: c.PodName, Namespace: c.Namespace, UID: c.PodUID, Source: c.PodSource}
	grace := int64(c.PodGrace / time.Second)
	p.Spec.TerminationGracePeriodSeconds = &grace
	return p
}

// Status returns the pod's Kubernetes-shaped status, from the PLEG's cache
// and what the workers noted. Safe for concurrent use.
func (l *Loop) Status(p *pod.Pod) pod.Status {
	recs := l.cfg.Cache.PodContainers(p.Metadata.UID)
	now := l.now()
	var st pod.Status
	l.notes.with(p.Metadata.UID, now, func(n *podNotes) { st = computeStatus(p, recs, *n, now) })
	return st
}
