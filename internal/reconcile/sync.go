package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"tug/internal/clock"
	"tug/internal/pod"
	"tug/internal/podplan"
	"tug/internal/podstatus"
	"tug/internal/steptime"
)

// podSyncer drives one pod's containers towards its manifest. The state it
// works from is what the runtime reports, by labels, so a sync after a tug
// restart continues where the last one stopped. What the runtime cannot
// say (why a container waits) goes into notes; when an exited container may
// restart comes from backoff.
type podSyncer struct {
	rt      Runtime
	sb      Sandbox
	net     Network
	cg      Cgroups
	admit   Admission // nil admits every pod
	notes   *statusNotes
	backoff *podplan.CrashBackoff
	now     clock.Clock
	log     *slog.Logger
	rec     eventRecorder // nil: no events
	// hooks are the optional parts of the sync (probes, lifecycle
	// handlers, devices, image pre-pull and repair, eviction, in-place
	// resize), by stage.
	hooks hooks
}

// portRetry is how often a pod whose hostPort is in use tries again.
const portRetry = 2 * time.Second

// syncResult says when the pod wants to be synced again (0: only when
// something happens), e.g. when a crashed container's back-off ends.
type syncResult struct {
	requeue time.Duration
}

// after keeps the earliest requeue of r and d.
func (r *syncResult) after(d time.Duration) {
	if d > 0 && (r.requeue == 0 || d < r.requeue) {
		r.requeue = d
	}
}

// syncPod makes the pod's containers match p: the sandbox and volumes, then
// each init container run to success in order, then every app container
// running with its current spec hash. A container whose hash changed is
// recreated; the others are left alone. An exited container is restarted
// as the restart policy says, once its crash back-off has passed. What each
// container needs is planned by podplan.Compute and carried out by carryOut.
//
// Admission comes first: a pod the policy refuses gets no sandbox and no
// container; a refused update keeps the last admitted version running (see
// admitted).
func (s *podSyncer) syncPod(ctx, wait context.Context, p *pod.Pod) (syncResult, error) {
	var res syncResult
	ctx = withHookContext(ctx, wait)
	if p = s.admitted(p); p == nil {
		return res, nil
	}
	uid := p.Metadata.UID
	if down, err := s.syncEvicted(ctx, p, &res); down || err != nil {
		return res, err
	}
	// With in-place resize, the containers are listed before the
	// sandbox (whose pod cgroup a resize orders its writes around), and
	// that listing, with the resized containers' records brought up to
	// date, serves the whole sync.
	var plan *podplan.ResizePlan
	var listed []pod.RuntimeContainer
	haveList := false
	if len(s.hooks.resize) > 0 {
		if recs, err := s.rt.PodContainers(ctx, uid); err == nil {
			listed, haveList = recs, true
			plan = s.planResize(p, podplan.GroupByName(listed), &res)
		}
	}
	sandboxPod := p
	switch {
	case plan != nil && len(plan.Items) == 0:
		p, sandboxPod = plan.Alloc, plan.Alloc // refused: keep what runs
	case plan != nil:
		sandboxPod = plan.Grow
	}
	sb, err := s.sandbox(ctx, sandboxPod)
	if err == nil && plan != nil && len(plan.Items) > 0 {
		p = s.applyResize(ctx, p, plan, listed, &res)
	}
	var inUse *pod.HostPortInUseError
	if errors.As(err, &inUse) {
		// Not a failure to retry with back-off: the pod waits for the port,
		// and looks again soon (the pod holding it may be removed).
		if s.notes.refuse(uid, pod.StateWaiting{Reason: pod.ReasonHostPortInUse, Message: inUse.Error()}) {
			s.log.Warn("pod refused: "+pod.ReasonHostPortInUse+"; it starts when the port is free", "pod", p.FullName(), "uid", uid, "err", inUse)
		}
		s.notes.syncFailed(uid, "")
		res.after(portRetry)
		return res, nil
	}
	if s.notes.refuse(uid, pod.StateWaiting{}) {
		s.log.Info("pod no longer refused", "pod", p.FullName(), "uid", uid)
	}
	if err != nil {
		s.event(p, "", eventWarning, reasonFailedCreatePodSandBox, "Failed to create pod sandbox: "+err.Error())
	} else if sb, err = s.rt.PreparePod(ctx, p, sb); errors.Is(err, pod.ErrCreateContainerConfig) {
		// A ConfigMap, Secret or claim a volume needs is missing: the
		// containers wait, naming it, until an update brings it.
		s.event(p, "", eventWarning, reasonFailedMount, err.Error())
		for _, list := range [][]pod.Container{p.Spec.InitContainers, p.Spec.Containers} {
			for _, c := range list {
				s.notes.wait(uid, c.Name, pod.ReasonCreateContainerConfigError, err.Error())
			}
		}
	} else if err != nil {
		s.event(p, "", eventWarning, reasonFailedMount, err.Error())
	}
	if err != nil {
		s.notes.syncFailed(uid, err.Error())
		return res, err
	}
	all := listed
	if !haveList {
		if all, err = s.rt.PodContainers(ctx, uid); err != nil {
			return res, fmt.Errorf("list containers of pod %s: %w", p.FullName(), err)
		}
	}
	s.notes.syncFailed(uid, "")
	for _, k := range s.hooks.listed {
		k.Listed(p, all, sb)
	}
	return res, s.carryOut(ctx, wait, p, sb, all, &res)
}

// admitted asks the admission policy about p and returns the version of the
// pod to sync: p when admitted; when refused, the last version admitted
// since tug started (so a bad update never stops what runs), or nil, and
// then the caller touches nothing of the pod: no sandbox is made, and
// containers a previous tug started for it are left as they are. The
// refusal is noted as the pod's Blocked status; it is checked again on
// every sync, so an update that complies runs at once.
func (s *podSyncer) admitted(p *pod.Pod) *pod.Pod {
	if s.admit == nil {
		return p
	}
	err := s.admit.Admit(p)
	run, changed := s.notes.admission(p, err)
	if changed {
		log := s.log.With("pod", p.FullName(), "uid", p.Metadata.UID, "source", p.Metadata.Source)
		switch {
		case err == nil:
			log.Info("pod admitted")
		case run != nil:
			log.Warn("pod update blocked by the admission policy; the last admitted version keeps running", "err", err)
		default:
			log.Warn("pod blocked by the admission policy", "err", err)
		}
	}
	return run
}

// sandbox sets up what the pod's containers share, in the kubelet's order:
// the pinned namespaces, the pod's cgroup, then (unless hostNetwork) its
// address on the pod network. Each step is idempotent, so a sync after a
// crash half-way through finishes the job. The pod's IP is noted for its
// status.
//
// Each step's time goes to a debug line ("pod sandbox ready"), the
// network's own steps included (steptime).
func (s *podSyncer) sandbox(ctx context.Context, p *pod.Pod) (pod.Sandbox, error) {
	st := steptime.New()
	ctx = steptime.With(ctx, st)
	ns, err := s.sb.EnsureNamespaces(ctx, p)
	if err != nil {
		return pod.Sandbox{}, err
	}
	st.Step("namespaces")
	sb := pod.Sandbox{Namespaces: ns}
	if ip := s.net.HostIP(); ip.IsValid() {
		sb.HostIP = ip.String()
	}
	if sb.CgroupParent, err = s.cg.EnsurePod(ctx, p); err != nil {
		return sb, fmt.Errorf("create cgroup of pod %s: %w", p.FullName(), err)
	}
	st.Step("cgroup")
	if p.Spec.HostNetwork {
		if ip := s.net.HostIP(); ip.IsValid() {
			sb.IP = ip.String()
		}
	} else {
		ip, err := s.net.SetUp(ctx, p, ns.Net)
		if err != nil {
			return sb, err // it names the pod already
		}
		sb.IP = ip.String()
	}
	s.notes.address(p.Metadata.UID, sb.IP)
	s.log.Debug("pod sandbox ready", append([]any{"pod", p.FullName(), "uid", p.Metadata.UID}, st.Attrs()...)...)
	return sb, nil
}

// carryOut plans the pod's containers and acts on the plan: containers no
// longer in the manifest go, then the init phase, then the app containers.
// When an init container runs to success, the pod's containers are listed
// and planned again, and the next init container follows in the same sync.
func (s *podSyncer) carryOut(ctx, wait context.Context, p *pod.Pod, sb pod.Sandbox, all []pod.RuntimeContainer, res *syncResult) error {
	for {
		f := s.facts(p, sb, all)
		pl := podplan.Compute(p, f)
		for _, name := range pl.Remove {
			if err := s.removeAll(ctx, p, f.ByName[name]); err != nil {
				return err
			}
		}
		if pl.ResetApps {
			for _, c := range p.Spec.Containers {
				if err := s.removeAll(ctx, p, f.ByName[c.Name]); err != nil {
					return err
				}
			}
		}
		again, err := s.actInit(ctx, wait, p, sb, pl, res)
		if err != nil || !pl.InitDone && !again {
			return err
		}
		if again {
			if all, err = s.rt.PodContainers(ctx, p.Metadata.UID); err != nil {
				return fmt.Errorf("list containers of pod %s: %w", p.FullName(), err)
			}
			continue
		}
		var errs []error
		for _, st := range pl.Apps {
			_, _, err := s.act(ctx, wait, p, sb, st, res)
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	}
}

// actInit acts on the plan's init steps. In the init phase it stops at the
// first step that blocks the next or fails; again says an init container
// ran to success and the pod is to be planned again. Once the phase is
// over, every sidecar's step runs, and their errors are joined.
func (s *podSyncer) actInit(ctx, wait context.Context, p *pod.Pod, sb pod.Sandbox, pl podplan.Plan, res *syncResult) (again bool, err error) {
	var errs []error
	for _, st := range pl.Init {
		blocked, again, err := s.act(ctx, wait, p, sb, st, res)
		if !st.InInit {
			errs = append(errs, err) // a sidecar beside the app containers
			continue
		}
		if err != nil || again || blocked {
			return again, err
		}
	}
	return false, errors.Join(errs...)
}

// facts gathers what podplan.Compute needs besides the pod: its containers by name
// and what tug noted of them.
func (s *podSyncer) facts(p *pod.Pod, sb pod.Sandbox, all []pod.RuntimeContainer) podplan.Facts {
	uid := p.Metadata.UID
	f := podplan.Facts{
		ByName:       podplan.GroupByName(all),
		CgroupParent: sb.CgroupParent,
		RestartAsked: map[string]bool{},
		GoneDevices:  map[string][]string{},
		Started:      s.hooks.Started,
		Due:          s.backoff.Due,
		Now:          s.now.Now(),
	}
	for _, recs := range f.ByName {
		if last := podplan.Latest(recs); last != nil && s.notes.restartRequested(uid, last.ID) {
			f.RestartAsked[last.ID] = true
		}
	}
	for _, k := range s.hooks.facts {
		k.Facts(p, &f)
	}
	s.noteDevices(p, f)
	return f
}

// act carries out one container's step. blocked says the init containers
// after it wait; again, that an init container ran to success and the pod
// is to be planned again.
func (s *podSyncer) act(ctx, wait context.Context, p *pod.Pod, sb pod.Sandbox, st podplan.Step, res *syncResult) (blocked, again bool, err error) {
	uid, c := p.Metadata.UID, st.Container
	switch st.Action {
	case podplan.Keep:
		if !st.InInit {
			s.notes.clear(uid, c.Name)
		}
		if s.unhealthy(ctx, p, c, st.Last, res) {
			return true, false, nil
		}
		if st.Gate {
			res.after(time.Second) // its startup probe gates the next init container
			return true, false, nil
		}
		return false, false, nil
	case podplan.Done:
		if !st.Init {
			s.notes.clear(uid, c.Name)
		}
		return false, false, nil
	case podplan.Stop:
		if err := s.stopContainer(ctx, p, c, *st.Last, p.GracePeriod(), nil); err != nil {
			return false, false, fmt.Errorf("stop sidecar %q: %w", c.Name, err)
		}
		return false, false, nil
	case podplan.BackOff:
		s.notes.wait(uid, c.Name, pod.ReasonCrashLoopBackOff, backoffMessage(st.Until.Sub(st.Last.FinishedAt), p, c.Name))
		s.event(p, c.Name, eventWarning, reasonBackOff, "Back-off restarting failed container "+c.Name+" in pod "+p.Metadata.Name)
		res.after(st.Until.Sub(s.now.Now()))
		return true, false, nil
	case podplan.WaitDevice:
		s.notes.wait(uid, c.Name, podstatus.ReasonDeviceUnavailable, "device "+strings.Join(st.Devices, ", ")+" unavailable")
		return true, false, nil
	case podplan.Fail:
		return true, false, nil // the pod has failed for good
	}
	id := ""
	if st.Action == podplan.WaitExit {
		id = st.Last.ID // still running from before: wait for it
	} else {
		if id, err = s.start(ctx, p, c, st.Init, st.Recs, sb); err != nil {
			return true, false, err
		}
		if !st.Init || c.IsSidecar() {
			if st.Gate {
				res.after(time.Second) // its startup probe gates the next one
				return true, false, nil
			}
			return false, false, nil
		}
	}
	code, err := s.rt.WaitContainer(wait, id)
	if err != nil {
		return true, false, fmt.Errorf("wait for init container %q: %w", c.Name, err)
	}
	if code != 0 {
		// Let the next sync read the exit back and apply the back-off.
		res.after(time.Millisecond)
		return true, false, nil
	}
	return false, true, nil
}

// start runs the next attempt of c. It first stops and removes the
// container's other records, keeping only the latest if it exited with the
// current spec (for its exit status), so a pod holds at most two containers
// per name. A failure is noted as the container's waiting reason.
func (s *podSyncer) start(ctx context.Context, p *pod.Pod, c *pod.Container, init bool, recs []pod.RuntimeContainer, sb pod.Sandbox) (string, error) {
	attempt := 0
	last := podplan.Latest(recs)
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
	if err := s.prestart(ctx, p, c, stale); err != nil {
		return "", err
	}
	if err := s.removeAll(ctx, p, stale); err != nil {
		return "", err
	}
	prev := s.notes.clear(p.Metadata.UID, c.Name) // the back-off it waited for is over
	id, err := s.rt.StartContainer(ctx, p, c, init, attempt, sb, s.cg.Container(p, c))
	if err != nil && s.startFailed(ctx, p, c, err) {
		id, err = s.rt.StartContainer(ctx, p, c, init, attempt, sb, s.cg.Container(p, c))
	}
	if err != nil {
		reason := startErrorReason(err, prev)
		s.notes.wait(p.Metadata.UID, c.Name, reason, err.Error())
		s.startError(p, c, reason, err)
		return "", err
	}
	if last != nil {
		s.notes.restarted(p.Metadata.UID, c.Name, last.ID)
	}
	// StartContainer creates and starts: both events at once.
	s.event(p, c.Name, eventNormal, reasonCreated, "Created container "+c.Name)
	s.event(p, c.Name, eventNormal, reasonStarted, "Started container "+c.Name)
	if err := s.postStart(ctx, p, c, id, sb); err != nil {
		return id, err
	}
	return id, nil
}

// prestart runs the PrestartHooks of c before the records it replaces
// (stale) are stopped, so that an update whose image cannot be pulled
// leaves the old container serving (and the rollout controller rolls the
// update back). A failure is noted as the container's waiting reason, as
// start notes it.
func (s *podSyncer) prestart(ctx context.Context, p *pod.Pod, c *pod.Container, stale []pod.RuntimeContainer) error {
	for _, k := range s.hooks.prestart {
		err := k.Prestart(ctx, p, c, stale)
		if err == nil {
			continue
		}
		prev := s.notes.clear(p.Metadata.UID, c.Name)
		reason := startErrorReason(err, prev)
		s.notes.wait(p.Metadata.UID, c.Name, reason, err.Error())
		s.startError(p, c, reason, err)
		if !podstatus.FailureReason(prev) {
			// Once per blocked update, not on every retry.
			s.event(p, c.Name, eventWarning, reasonUpdateBlocked, fmt.Sprintf(
				"Update of container %s to image %s blocked (%s); the container of its previous spec keeps running", c.Name, c.Image, reason))
			s.log.Warn("container update blocked; the container of its previous spec keeps running",
				"pod", p.FullName(), "uid", p.Metadata.UID, "container", c.Name, "image", c.Image, "err", err)
		}
		return err
	}
	return nil
}

// startFailed asks the StartFailedHooks about a start of c that failed
// with err, and reports whether one mended its cause (the start is then
// tried again at once).
func (s *podSyncer) startFailed(ctx context.Context, p *pod.Pod, c *pod.Container, err error) bool {
	for _, k := range s.hooks.failed {
		if k.StartFailed(ctx, p, c, err) {
			return true
		}
	}
	return false
}

// startError records the Failed warning of a start of c that failed with
// err. A deferred pull has none: its image manager records one
// ImagePullDeferred event per wait, and the wait is retried until the
// image fits, so a warning on every try would only repeat it.
func (s *podSyncer) startError(p *pod.Pod, c *pod.Container, reason string, err error) {
	if reason == pod.ReasonImagePullDeferred {
		return
	}
	s.event(p, c.Name, eventWarning, reasonFailed, "Error: "+reason+": "+err.Error())
}

// startErrorReason is the kubelet's reason for a container that could not
// start: ImagePullDeferred while its image does not fit on the image
// filesystem, ErrImagePull the first time a pull fails and ImagePullBackOff while
// it is retried (prev is the reason noted before this try),
// ErrImageNeverPull, CreateContainerConfigError, or CreateContainerError.
func startErrorReason(err error, prev string) string {
	switch {
	case errors.Is(err, pod.ErrImagePullDeferred):
		return pod.ReasonImagePullDeferred
	case errors.Is(err, pod.ErrImageNeverPull):
		return pod.ReasonErrImageNeverPull
	case errors.Is(err, pod.ErrImagePull) && (prev == pod.ReasonErrImagePull || prev == pod.ReasonImagePullBackOff):
		return pod.ReasonImagePullBackOff
	case errors.Is(err, pod.ErrImagePull):
		return pod.ReasonErrImagePull
	case errors.Is(err, pod.ErrCreateContainerConfig):
		return pod.ReasonCreateContainerConfigError
	}
	return pod.ReasonCreateContainerError
}

// killPod stops every container of the pod (app containers together, each
// with the pod's grace period), removes them, then the sandbox and what was
// prepared for the pod.
func (s *podSyncer) killPod(ctx context.Context, p *pod.Pod) error {
	for _, k := range s.hooks.removed {
		k.Removed(p.Metadata.UID)
	}
	all, err := s.rt.PodContainers(ctx, p.Metadata.UID)
	if err != nil {
		return fmt.Errorf("list containers of pod %s: %w", p.FullName(), err)
	}
	for _, wave := range podplan.KillOrder(p, all) {
		if err := s.removeAll(ctx, p, wave); err != nil {
			return err
		}
	}
	if err := s.removeSandbox(ctx, p.Metadata.UID); err != nil {
		return fmt.Errorf("remove sandbox of pod %s: %w", p.FullName(), err)
	}
	if err := s.rt.CleanupPod(ctx, p); err != nil {
		return fmt.Errorf("clean up pod %s: %w", p.FullName(), err)
	}
	s.notes.forget(p.Metadata.UID)
	s.backoff.Forget(p.Metadata.UID)
	return nil
}

// initContainer returns p's init container of that name, or nil.
func initContainer(p *pod.Pod, name string) *pod.Container {
	for i := range p.Spec.InitContainers {
		if p.Spec.InitContainers[i].Name == name {
			return &p.Spec.InitContainers[i]
		}
	}
	return nil
}

// removeSandbox undoes sandbox, in reverse order, once the pod's containers
// are gone: its network, namespaces and cgroup. Each step runs even when an
// earlier one failed, so one leftover does not keep the others.
func (s *podSyncer) removeSandbox(ctx context.Context, uid string) error {
	var errs []error
	if err := s.net.TearDown(ctx, uid); err != nil {
		errs = append(errs, fmt.Errorf("tear down network: %w", err))
	}
	if err := s.sb.RemoveNamespaces(ctx, uid); err != nil {
		errs = append(errs, fmt.Errorf("remove namespaces: %w", err))
	}
	if err := s.cg.RemovePod(ctx, uid); err != nil {
		errs = append(errs, fmt.Errorf("remove cgroup: %w", err))
	}
	return errors.Join(errs...)
}

// removeAll stops the given containers concurrently, then removes them.
func (s *podSyncer) removeAll(ctx context.Context, p *pod.Pod, recs []pod.RuntimeContainer) error {
	errs := make([]error, len(recs))
	sb := s.sandboxLookup(ctx, p) // looked up once, not by each stop
	var wg sync.WaitGroup
	for i, r := range recs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r.State == pod.RunRunning {
				s.event(p, r.Name, eventNormal, reasonKilling, "Stopping container "+r.Name)
			}
			if err := s.stopContainer(ctx, p, containerSpec(p, r.Name), r, p.GracePeriod(), sb); err != nil {
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

// backoffMessage is the kubelet's CrashLoopBackOff message.
func backoffMessage(d time.Duration, p *pod.Pod, name string) string {
	return fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", d.Round(time.Second), name, p.FullName())
}
