package podplan

import (
	"strings"
	"sync"
	"time"

	"tug/internal/clock"
	"tug/internal/pod"
)

// CrashBackoff decides when an exited container may be restarted, as the
// kubelet does: the first restart is immediate, then the delay starts at
// Initial and doubles up to Max; a container that ran for Reset or longer
// before it exited starts over. State is kept per pod UID and container
// name, in memory: after a tug restart a crash-looping container gets one
// immediate restart, then backs off again. It is safe for concurrent use.
//
// A due time is held on the monotonic clock: the exit's time (containerd's,
// a wall time) gives how much of the delay is left when Due is first asked,
// and the rest counts from then, so that a step of the wall clock (NTP
// after a boot at 1970, or correcting a clock a year ahead) neither
// restarts a container early nor holds it back; an exit time in the future
// (the clock stepped back since) is taken as "just now".
type CrashBackoff struct {
	Initial, Max, Reset time.Duration
	// Clock tells "now" when a due time is first computed. nil: the
	// system clock, whose readings carry the monotonic clock.
	Clock clock.Clock

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
		e.attempt, e.due = rec.Attempt, b.held(rec.FinishedAt, 0)
		return e.due
	}
	e.attempt, e.due = rec.Attempt, b.held(rec.FinishedAt, e.next)
	if e.next *= 2; e.next > b.Max {
		e.next = b.Max
	}
	return e.due
}

// held returns finished+delay as a time of the monotonic clock: now plus
// what is left of the delay, at most all of it. A delay already over is
// finished+delay itself, a time past.
func (b *CrashBackoff) held(finished time.Time, delay time.Duration) time.Time {
	due := finished.Add(delay)
	if delay <= 0 {
		return due
	}
	now := b.Clock.Now()
	left := due.Sub(now)
	if left <= 0 {
		return due
	}
	return now.Add(min(left, delay))
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
