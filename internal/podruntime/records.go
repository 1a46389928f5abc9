package podruntime

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/containerd/containerd/v2/core/containers"
)

// recordsMaxAge is how long ListContainers reuses the container records it
// listed when nothing says they changed: a safety net for changes made
// behind tug's back (ctr in tug's namespace), as long as a pod's periodic
// sync. At 10 s the listings were a third of what an idle tug allocated.
const recordsMaxAge = time.Minute

// recordCache holds the last listing of tug's container records. The
// PLEG relists every second, and a record carries the container's whole
// OCI spec: decoding 30 of them each second was most of what an idle tug
// did. Records change only when tug creates, labels or deletes a
// container (each such call ends with changed) or someone else does (the
// age limit); the tasks, whose state does change on its own, are listed
// on every call.
type recordCache struct {
	gen atomic.Uint64 // counts tug's changes to container records

	mu      sync.Mutex
	recs    []containers.Container
	known   map[string]bool // the records' IDs and the tasks listed with them
	listGen uint64          // gen before recs were listed
	listed  time.Time       // when; zero: never
}

// changed tells the cache that a container record was created, changed or
// deleted: the next list reads them again. Call it after the change.
func (c *recordCache) changed() { c.gen.Add(1) }

// get returns the records, listing them again (with list) when tug changed
// one since they were listed, when a task is new since then, or when they
// are older than recordsMaxAge. taskIDs are the containers that have a
// task now (tug's and any other in the namespace). The records are kept
// without their spec and extensions (about 10 KiB a container, which no
// listing reads). The caller must not modify the records.
func (c *recordCache) get(ctx context.Context, now time.Time, taskIDs []string, list func(context.Context) ([]containers.Container, error)) ([]containers.Container, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fresh(now, taskIDs) {
		return c.recs, nil
	}
	gen := c.gen.Load() // before the list: a change during it makes the next call list again
	recs, err := list(ctx)
	if err != nil {
		return nil, err
	}
	for i := range recs {
		recs[i].Spec, recs[i].Extensions = nil, nil
	}
	c.recs, c.listGen, c.listed = recs, gen, now
	c.known = make(map[string]bool, len(recs)+len(taskIDs))
	for _, r := range recs {
		c.known[r.ID] = true
	}
	for _, id := range taskIDs {
		c.known[id] = true
	}
	return recs, nil
}

func (c *recordCache) fresh(now time.Time, taskIDs []string) bool {
	if c.listed.IsZero() || c.gen.Load() != c.listGen || now.Sub(c.listed) >= recordsMaxAge || now.Before(c.listed) {
		return false
	}
	for _, id := range taskIDs {
		if !c.known[id] {
			return false
		}
	}
	return true
}
