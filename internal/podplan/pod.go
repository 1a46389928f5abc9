package podplan

import (
	"time"

	"tug/internal/pod"
)

// Eviction is what the eviction manager recorded of an evicted pod.
type Eviction struct {
	At   time.Time // when it was evicted
	Done bool      // its containers, sandbox and volumes are removed
}

// EvictionStep is what an evicted pod needs, in order: Remove, then stay
// down until Until, or start again.
type EvictionStep struct {
	// Remove: its containers, sandbox and volumes go now.
	Remove bool
	// Until is when the pod asks again whether it may start (zero when it
	// starts again now).
	Until time.Time
	// Message, when the node's pressure holds the pod down, says which
	// condition does.
	Message string
}

// Evicted plans an evicted pod's sync: it is removed once, stays down
// for retry at least, and then starts again when admits (the eviction
// manager, asked only then) lets it, else asks again retry later. It is
// pure but for admits.
func Evicted(e Eviction, now time.Time, retry time.Duration, admits func() (ok bool, message string)) EvictionStep {
	st := EvictionStep{Remove: !e.Done}
	if end := e.At.Add(retry); now.Before(end) {
		st.Until = end
		return st
	}
	if ok, msg := admits(); !ok {
		st.Until, st.Message = now.Add(retry), msg
	}
	return st
}

// KillOrder is the order in which a removed pod's containers stop: each
// wave stops together, after the one before. The app containers (and the
// init containers that are not sidecars) go first, then the sidecars one
// at a time in the reverse of their order, so that each outlives what it
// serves, as the kubelet stops them.
func KillOrder(p *pod.Pod, recs []pod.RuntimeContainer) [][]pod.RuntimeContainer {
	sidecar := map[string]bool{}
	for _, c := range p.Spec.InitContainers {
		if c.IsSidecar() {
			sidecar[c.Name] = true
		}
	}
	var apps []pod.RuntimeContainer
	byName := map[string][]pod.RuntimeContainer{}
	for _, r := range recs {
		if r.Init && sidecar[r.Name] {
			byName[r.Name] = append(byName[r.Name], r)
			continue
		}
		apps = append(apps, r)
	}
	waves := [][]pod.RuntimeContainer{apps}
	for i := len(p.Spec.InitContainers) - 1; i >= 0; i-- {
		if rs := byName[p.Spec.InitContainers[i].Name]; len(rs) > 0 {
			waves = append(waves, rs)
		}
	}
	return waves
}
