package podplan

import "tug/internal/pod"

// AppsDone reports whether every app container of p has exited and will
// not be restarted.
func AppsDone(p *pod.Pod, byName map[string][]pod.RuntimeContainer) bool {
	if byName == nil {
		return false
	}
	for _, c := range p.Spec.Containers {
		last := Latest(byName[c.Name])
		if last == nil || last.State != pod.RunExited || RestartsIn(p, last) {
			return false
		}
	}
	return true
}

// RestartsIn reports whether exited container last of p is started again:
// as its restart policy says (an app container's own restartPolicy and
// restartPolicyRules, else the pod's), except in a Job's pod, where a
// failed container is retried until it has failed backoffLimit+1 times
// (each try a new pod in Kubernetes, a new attempt here), whatever the
// policy.
func RestartsIn(p *pod.Pod, last *pod.RuntimeContainer) bool {
	if p.BackoffLimit != nil {
		return last.ExitCode != 0 && last.Attempt < int(*p.BackoffLimit)
	}
	if c := appContainer(p, last.Name); c != nil && !last.Init {
		return c.RestartsAfter(p.Spec.RestartPolicy, last.ExitCode)
	}
	return restarts(p.Spec.RestartPolicy, last.ExitCode)
}

// appContainer returns p's app container name, or nil.
func appContainer(p *pod.Pod, name string) *pod.Container {
	for i := range p.Spec.Containers {
		if p.Spec.Containers[i].Name == name {
			return &p.Spec.Containers[i]
		}
	}
	return nil
}

// restarts reports whether a container that exited with code is started
// again under policy.
func restarts(policy pod.RestartPolicy, code int) bool {
	switch policy {
	case pod.RestartAlways:
		return true
	case pod.RestartOnFailure:
		return code != 0
	default:
		return false
	}
}

// GroupByName groups containers by their manifest name, keeping the
// runtime's order (oldest first).
func GroupByName(all []pod.RuntimeContainer) map[string][]pod.RuntimeContainer {
	m := map[string][]pod.RuntimeContainer{}
	for _, c := range all {
		m[c.Name] = append(m[c.Name], c)
	}
	return m
}

// Latest returns the record with the highest attempt, or nil.
func Latest(recs []pod.RuntimeContainer) *pod.RuntimeContainer {
	var l *pod.RuntimeContainer
	for i := range recs {
		if l == nil || recs[i].Attempt >= l.Attempt {
			l = &recs[i]
		}
	}
	return l
}
