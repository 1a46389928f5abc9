package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"tug/internal/pod"
)

// ErrInitFailed means an init container exited non-zero; the pod's app
// containers wait until a retry of it succeeds.
var ErrInitFailed = errors.New("reconcile: init container failed")

// podSyncer drives one pod's containers towards its manifest. The state it
// works from is what the runtime reports, by labels, so a sync after a tug
// restart continues where the last one stopped.
type podSyncer struct {
	rt Runtime
	sb Sandbox
}

// syncPod makes the pod's containers match p: namespaces and volumes, then
// each init container run to success in order, then every app container
// running with its current spec hash. A container whose hash changed is
// recreated; the others are left alone.
func (s *podSyncer) syncPod(ctx, wait context.Context, p *pod.Pod) error {
	ns, err := s.sb.EnsureNamespaces(ctx, p)
	if err != nil {
		return err
	}
	if err := s.rt.PreparePod(ctx, p); err != nil {
		return err
	}
	all, err := s.rt.PodContainers(ctx, p.Metadata.UID)
	if err != nil {
		return fmt.Errorf("list containers of pod %s: %w", p.FullName(), err)
	}
	byName := groupByName(all)

	// Containers that are no longer in the manifest go first.
	wanted := map[string]bool{}
	for _, c := range p.Spec.InitContainers {
		wanted[c.Name] = true
	}
	for _, c := range p.Spec.Containers {
		wanted[c.Name] = true
	}
	for name, recs := range byName {
		if !wanted[name] {
			if err := s.removeAll(ctx, p, recs); err != nil {
				return err
			}
			delete(byName, name)
		}
	}

	if ok, err := s.syncInit(ctx, wait, p, ns, byName); !ok || err != nil {
		return err
	}
	for i := range p.Spec.Containers {
		c := &p.Spec.Containers[i]
		if err := s.syncApp(ctx, p, c, ns, byName[c.Name]); err != nil {
			return err
		}
	}
	return nil
}

// syncInit runs the init containers in order, each to success. Once the app
// containers have run, init containers are not run again unless their spec
// changed; then the app containers are stopped and the whole sequence runs
// anew, so init containers always finish before app containers start. It
// reports whether the app containers may run: false (with no error) when an
// init container failed under restartPolicy Never, which fails the pod.
func (s *podSyncer) syncInit(ctx, wait context.Context, p *pod.Pod, ns pod.Namespaces, byName map[string][]pod.RuntimeContainer) (bool, error) {
	if len(p.Spec.InitContainers) == 0 {
		return true, nil
	}
	changed := false
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		if last := latest(byName[c.Name]); last != nil && last.SpecHash != pod.ContainerHash(p, c) {
			changed = true
		}
	}
	appsStarted := false
	for _, c := range p.Spec.Containers {
		if len(byName[c.Name]) > 0 {
			appsStarted = true
		}
	}
	if appsStarted && !changed {
		return true, nil
	}
	if changed {
		for _, c := range p.Spec.Containers {
			if err := s.removeAll(ctx, p, byName[c.Name]); err != nil {
				return false, err
			}
			delete(byName, c.Name)
		}
	}
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		recs := byName[c.Name]
		last := latest(recs)
		hash := pod.ContainerHash(p, c)
		if last != nil && last.SpecHash == hash && last.State == pod.RunExited && last.ExitCode == 0 {
			continue
		}
		if last != nil && last.SpecHash == hash && last.State == pod.RunExited && p.Spec.RestartPolicy == pod.RestartNever {
			return false, nil // the pod has failed for good
		}
		id := ""
		if last != nil && last.SpecHash == hash && last.State == pod.RunRunning {
			id = last.ID // still running from before: wait for it
		} else {
			var err error
			if id, err = s.start(ctx, p, c, true, recs, ns); err != nil {
				return false, err
			}
		}
		code, err := s.rt.WaitContainer(wait, id)
		if err != nil {
			return false, fmt.Errorf("wait for init container %q: %w", c.Name, err)
		}
		if code != 0 {
			if p.Spec.RestartPolicy == pod.RestartNever {
				return false, nil
			}
			return false, fmt.Errorf("init container %q exited with code %d: %w", c.Name, code, ErrInitFailed)
		}
	}
	return true, nil
}

// syncApp keeps one app container running with the current spec, restarting
// an exited one as the pod's restart policy says.
func (s *podSyncer) syncApp(ctx context.Context, p *pod.Pod, c *pod.Container, ns pod.Namespaces, recs []pod.RuntimeContainer) error {
	last := latest(recs)
	switch {
	case last == nil, last.SpecHash != pod.ContainerHash(p, c):
		// new, or changed: start replaces the old container
	case last.State == pod.RunRunning:
		return nil
	case last.State == pod.RunExited && !restarts(p.Spec.RestartPolicy, last.ExitCode):
		return nil
	}
	_, err := s.start(ctx, p, c, false, recs, ns)
	return err
}

// start runs the next attempt of c. It first stops and removes the
// container's other records, keeping only the latest if it exited with the
// current spec (for its exit status), so a pod holds at most two containers
// per name.
func (s *podSyncer) start(ctx context.Context, p *pod.Pod, c *pod.Container, init bool, recs []pod.RuntimeContainer, ns pod.Namespaces) (string, error) {
	attempt := 0
	last := latest(recs)
	if last != nil {
		attempt = last.Attempt + 1
	}
	var stale []pod.RuntimeContainer
	for _, r := range recs {
		if r.ID == last.ID && r.State == pod.RunExited && r.SpecHash == pod.ContainerHash(p, c) {
			continue // the previous attempt, kept for its exit status and logs
		}
		stale = append(stale, r)
	}
	if err := s.removeAll(ctx, p, stale); err != nil {
		return "", err
	}
	return s.rt.StartContainer(ctx, p, c, init, attempt, ns)
}

// killPod stops every container of the pod (app containers together, each
// with the pod's grace period), removes them, then the namespaces and what
// was prepared for the pod.
func (s *podSyncer) killPod(ctx context.Context, p *pod.Pod) error {
	all, err := s.rt.PodContainers(ctx, p.Metadata.UID)
	if err != nil {
		return fmt.Errorf("list containers of pod %s: %w", p.FullName(), err)
	}
	if err := s.removeAll(ctx, p, all); err != nil {
		return err
	}
	if err := s.sb.RemoveNamespaces(ctx, p.Metadata.UID); err != nil {
		return fmt.Errorf("remove namespaces of pod %s: %w", p.FullName(), err)
	}
	if err := s.rt.CleanupPod(ctx, p); err != nil {
		return fmt.Errorf("clean up pod %s: %w", p.FullName(), err)
	}
	return nil
}

// removeAll stops the given containers concurrently, then removes them.
func (s *podSyncer) removeAll(ctx context.Context, p *pod.Pod, recs []pod.RuntimeContainer) error {
	errs := make([]error, len(recs))
	var wg sync.WaitGroup
	for i, r := range recs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.rt.StopContainer(ctx, r.ID, p.GracePeriod()); err != nil {
				errs[i] = fmt.Errorf("stop container %q: %w", r.Name, err)
				return
			}
			if err := s.rt.RemoveContainer(ctx, r.ID); err != nil {
				errs[i] = fmt.Errorf("remove container %q: %w", r.Name, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
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

// groupByName groups containers by their manifest name, keeping the
// runtime's order (oldest first).
func groupByName(all []pod.RuntimeContainer) map[string][]pod.RuntimeContainer {
	m := map[string][]pod.RuntimeContainer{}
	for _, c := range all {
		m[c.Name] = append(m[c.Name], c)
	}
	return m
}

// latest returns the record with the highest attempt, or nil.
func latest(recs []pod.RuntimeContainer) *pod.RuntimeContainer {
	var l *pod.RuntimeContainer
	for i := range recs {
		if l == nil || recs[i].Attempt >= l.Attempt {
			l = &recs[i]
		}
	}
	return l
}
