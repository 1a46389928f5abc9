package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"tug/internal/pod"
	"tug/internal/podplan"
)

// evictionRetry is how long an evicted pod stays down at least, and how
// often it asks the ReadmitHooks whether it may start again.
const evictionRetry = 10 * time.Second

// evictedNote is what Evict recorded of a pod.
type evictedNote struct {
	message string
	grace   time.Duration
	at      time.Time
	done    bool // its containers, sandbox and volumes are removed
}

// Evict marks the pod evicted with the eviction manager's message: its
// worker stops its containers within grace and removes its sandbox and
// volumes (emptyDirs included, as the kubelet deletes an evicted pod's),
// its status is Failed/Evicted with message, and it is started again (a
// new sandbox, empty emptyDirs, attempt 0) once it has been down for
// evictionRetry and every ReadmitHook admits it: it is still wanted by its source.
// Safe for concurrent use.
func (l *Loop) Evict(_ context.Context, p *pod.Pod, message string, grace time.Duration) error {
	l.notes.mu.Lock()
	l.notes.pod(p.Metadata.UID, l.now.Now()).evicted = &evictedNote{message: message, grace: grace, at: l.now.Now()}
	l.notes.mu.Unlock()
	select {
	case l.evictions <- p.Metadata.UID:
	default: // the loop is busy: the pod's next resync sees the note
	}
	return nil
}

// Evicted reports whether the pod is evicted now. Safe for concurrent use.
func (l *Loop) Evicted(uid string) bool {
	l.notes.mu.Lock()
	defer l.notes.mu.Unlock()
	p := l.notes.pods[uid]
	return p != nil && p.evicted != nil
}

// syncEvicted carries out an evicted pod's plan (podplan.Evicted): it
// removes what the pod runs (once), and keeps it down until it may start
// again. down reports that the sync must stop here.
func (s *podSyncer) syncEvicted(ctx context.Context, p *pod.Pod, res *syncResult) (down bool, err error) {
	uid := p.Metadata.UID
	s.notes.mu.Lock()
	var ev evictedNote
	if pn := s.notes.pods[uid]; pn != nil && pn.evicted != nil {
		ev = *pn.evicted
	}
	s.notes.mu.Unlock()
	if ev.at.IsZero() {
		return false, nil
	}
	admits := func() (bool, string) {
		return s.hooks.readmit(p, s.cg != nil && s.cg.QOSClass(p) == "BestEffort")
	}
	st := podplan.Evicted(podplan.Eviction{At: ev.at, Done: ev.done}, s.now.Now(), evictionRetry, admits)
	if st.Remove {
		q := *p
		grace := int64(ev.grace / time.Second)
		q.Spec.TerminationGracePeriodSeconds = &grace
		all, err := s.rt.PodContainers(ctx, uid)
		if err != nil {
			return true, fmt.Errorf("list containers of pod %s: %w", p.FullName(), err)
		}
		if err := s.removeAll(ctx, &q, all); err != nil {
			return true, err
		}
		err = errors.Join(s.removeSandbox(ctx, uid), s.rt.CleanupPod(ctx, p))
		if err != nil {
			return true, fmt.Errorf("remove evicted pod %s: %w", p.FullName(), err)
		}
		s.notes.mu.Lock()
		if pn := s.notes.pods[uid]; pn != nil && pn.evicted != nil {
			pn.evicted.done = true
			pn.ip = ""
		}
		s.notes.mu.Unlock()
		s.backoff.Forget(uid)
		s.log.Warn("pod evicted", "pod", p.FullName(), "uid", uid, "message", ev.message)
	}
	if !st.Until.IsZero() {
		if st.Message != "" {
			s.notes.mu.Lock()
			if pn := s.notes.pods[uid]; pn != nil && pn.evicted != nil {
				pn.evicted.message = st.Message
			}
			s.notes.mu.Unlock()
		}
		res.after(st.Until.Sub(s.now.Now()))
		return true, nil
	}
	s.notes.mu.Lock()
	if pn := s.notes.pods[uid]; pn != nil {
		pn.evicted = nil
	}
	s.notes.mu.Unlock()
	s.log.Info("starting evicted pod again", "pod", p.FullName(), "uid", uid)
	return false, nil
}
