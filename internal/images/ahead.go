package images

import (
	"sync"
	"time"
)

// aheadFor is how long a pull made ahead of a container's start serves
// that start: the start follows once the running container it replaces has
// stopped (its grace period, 30 s by default); a start later than this
// asks the registry again.
const aheadFor = 10 * time.Minute

// aheadPulls are the images pulled ahead of a start (EnsureAhead,
// EnsureVolumeAhead), by pod UID, container and image as the manifest
// writes it: the start that follows takes the mark and uses the image
// present instead of asking the registry a second time (an Always pull).
// Safe for concurrent use.
type aheadPulls struct {
	mu    sync.Mutex
	marks map[aheadKey]time.Time
}

type aheadKey struct{ uid, container, image string }

// mark records that r's image was pulled ahead at now.
func (a *aheadPulls) mark(r request, now time.Time) {
	if r.pod == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.marks == nil {
		a.marks = map[aheadKey]time.Time{}
	}
	a.marks[aheadKey{r.pod.Metadata.UID, r.container, r.image}] = now
}

// take removes r's mark and reports whether it was set less than aheadFor
// before now.
func (a *aheadPulls) take(r request, now time.Time) bool {
	if r.pod == nil {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	k := aheadKey{r.pod.Metadata.UID, r.container, r.image}
	at, ok := a.marks[k]
	delete(a.marks, k)
	return ok && now.Sub(at) < aheadFor
}

// forget drops the marks of pod uid.
func (a *aheadPulls) forget(uid string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k := range a.marks {
		if k.uid == uid {
			delete(a.marks, k)
		}
	}
}
