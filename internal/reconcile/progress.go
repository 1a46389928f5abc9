package reconcile

import (
	"tug/internal/pod"
	"tug/internal/podplan"
	"tug/internal/podstatus"
)

// Progress is how far a pod's spec is applied, read from the same records
// and notes as its status: what the rollout controller (internal/rollout)
// judges an update by.
type Progress struct {
	// Status is the pod's status, as Status computes it.
	Status pod.Status
	// Current reports whether every app container's newest record (and
	// every sidecar's) was created from this spec, or runs with it but
	// for a resize in place (applied or pending): a resize restarts
	// nothing, so an update that is one is not watched for restarts.
	Current bool
	// Attempts is, by container name, the attempt of the newest record of
	// each app container and sidecar created from this spec, less the
	// attempts a requested restart (Loop.Restart) started: those are not
	// failures.
	Attempts map[string]int
	// Failure is a waiting reason that means the spec cannot run
	// (ErrImagePull, ImagePullBackOff, ErrImageNeverPull,
	// CreateContainerError, CreateContainerConfigError, Blocked), and
	// Message its text; "" when there is none.
	Failure, Message string
}

// Progress reports how far p (the spec applied now) has got.
func (l *Loop) Progress(p *pod.Pod) Progress {
	pr := Progress{Status: l.Status(p), Current: true, Attempts: map[string]int{}}
	byName := podplan.GroupByName(l.cfg.Cache.PodContainers(p.Metadata.UID))
	check := func(c *pod.Container) {
		last := podplan.Latest(byName[c.Name])
		if last == nil || (last.SpecHash != pod.ContainerHash(p, c) && !podplan.ResizeOnly(p, c, last)) {
			pr.Current = false
			return
		}
		pr.Attempts[c.Name] = last.Attempt
	}
	for i := range p.Spec.InitContainers {
		if c := &p.Spec.InitContainers[i]; c.IsSidecar() {
			check(c)
		}
	}
	for i := range p.Spec.Containers {
		check(&p.Spec.Containers[i])
	}
	l.notes.with(p.Metadata.UID, l.now.Now(), func(n *podNotes) {
		for name := range pr.Attempts {
			pr.Attempts[name] -= n.askedAttempts[name]
		}
		if n.blocked != "" {
			pr.Failure, pr.Message = pod.ReasonBlocked, n.blocked
			return
		}
		for _, name := range containerNames(p) {
			if w := n.waiting[name]; podstatus.FailureReason(w.Reason) {
				pr.Failure, pr.Message = w.Reason, name+": "+w.Message
				return
			}
		}
	})
	return pr
}

// containerNames lists the names of p's init and app containers, in order.
func containerNames(p *pod.Pod) []string {
	var names []string
	for _, c := range p.Spec.InitContainers {
		names = append(names, c.Name)
	}
	for _, c := range p.Spec.Containers {
		names = append(names, c.Name)
	}
	return names
}
