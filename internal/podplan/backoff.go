package podplan

import (
	"strings"
	"sync"
	"time"

	"tug/internal/pod"
)

// CrashBackoff decides when an exited container may be restarted, as the
// kubelet does: the first restart is immediate, then the delay starts at
// Initial and doubles up to Max; a container that ran for Reset or longer
// before it exited starts over. State is kept per pod UID and container
// name, in memory: after a tug restart a crash-looping container gets one
// immediate restart, then backs off again. It is safe for concurrent use.
type CrashBackoff struct {
	Initial, Max, Reset time.Duration

	mu      sync.Mutex
	entries map[string]*backoffEntry
}

type backoffEntry struct {
	attempt int           // the exited attempt the due time is for
	due     time.Time     // when that attempt may be restarted
	next    time.Duration // the delay for the next exit
}

// Due returns when the exited container rec may be restarted. Asking again
// for the same exited attempt returns the same time.
func (b *CrashBackoff) Due(rec *pod.RuntimeContainer) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.entries == nil {
		b.entries = map[string]*backoffEntry{}
	}
	key := rec.PodUID + "/" + rec.Name
	e := b.entries[key]
	if e != nil && e.attempt == rec.Attempt {
		return e.due
	}
	ranFor := rec.FinishedAt.Sub(rec.StartedAt)
	if e == nil || (!rec.StartedAt.IsZero() && ranFor >= b.Reset) {
		e = &backoffEntry{next: b.Initial}
		b.entries[key] = e
		e.attempt, e.due = rec.Attempt, rec.FinishedAt
		return e.due
	}
	e.attempt, e.due = rec.Attempt, rec.FinishedAt.Add(e.next)
	if e.next *= 2; e.next > b.Max {
		e.next = b.Max
	}
	return e.due
}

// Forget drops the state of every container of the pod.
func (b *CrashBackoff) Forget(uid string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k := range b.entries {
		if strings.HasPrefix(k, uid+"/") {
			delete(b.entries, k)
		}
	}
}
