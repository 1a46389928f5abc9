package podstatus

import (
	"fmt"
	"slices"

	"tug/internal/pod"
	"tug/internal/podconfig"
	"tug/internal/podview"
)

// Snapshot is the desired state as the pod store shows it (implemented by
// podconfig.Store): the applied pods and the state of every manifest file.
type Snapshot interface {
	Pods() []*pod.Pod
	Files() []podconfig.FileState
}

// PodStatuser computes the observed status of pods (implemented by
// reconcile.Loop).
type PodStatuser interface {
	Status(p *pod.Pod) pod.Status
	Orphans() []podview.View
	Terminating() []podview.View
}

// Served is the status the API serves (it fills api.StatusSource): every
// desired pod with the status the loop computes, the pods being removed
// (with their deletionTimestamp) until their containers are gone, the pods
// of sources that are no longer configured until they are removed, and
// every manifest file with the fetch state of its source.
type Served struct {
	Store Snapshot
	Loop  PodStatuser
	// Fetch returns the fetch state of each URL source, by source name.
	Fetch map[string]func() podview.FetchStatus
	// Waits, when set, returns the updates held for their update window,
	// by file.
	Waits func() map[pod.Origin]podview.UpdateWaiting
	// Waves, when set, returns each URL bundle's place in its rollout, by
	// file; a file whose applied content failed (its file rollout's
	// failed content) is rolled_back.
	Waves func() map[pod.Origin]podview.WaveState
	// Rollouts, when set, adds the RolloutFailed condition of pods whose
	// update failed (implemented by rollout.Controller).
	Rollouts RolloutConditions
	// PIDLimits, when set, adds the PIDLimitReached condition of pods
	// that reached their process limit.
	PIDLimits PodConditions
	// Pulls, when set, gives a container waiting in ContainerCreating
	// with no message of its own the progress of its image's pull.
	Pulls PullMessages
	// ImagesFromCache, when set, adds the tug.io/ImageFromCache condition
	// of pods that run a cached image because their Always pull reached
	// no registry. It leaves the pod's reason as it is: the pod runs.
	ImagesFromCache ImageFromCacheConditions
}

// ImageFromCacheConditions gives the tug.io/ImageFromCache condition of a
// pod (implemented by images.Manager); nil when it has none.
type ImageFromCacheConditions interface {
	ImageFromCacheCondition(p *pod.Pod) *pod.Condition
}

// PullMessages tells what an image pull under way has done (implemented
// by images.Manager).
type PullMessages interface {
	// PullMessage returns `Pulling image "IMAGE"`, with its progress
	// ("12.3 MB of 45.6 MB") once known, while image is being pulled;
	// ok is false when it is not.
	PullMessage(image string) (msg string, ok bool)
}

// withPullMessages gives each container of st that waits in
// ContainerCreating with no message the progress of its image's pull.
func withPullMessages(st pod.Status, pulls PullMessages) pod.Status {
	set := func(statuses []pod.ContainerStatus) {
		for i := range statuses {
			w := statuses[i].State.Waiting
			if w == nil || w.Reason != pod.ReasonContainerCreating || w.Message != "" {
				continue
			}
			if msg, ok := pulls.PullMessage(statuses[i].Image); ok {
				w.Message = msg
			}
		}
	}
	set(st.InitContainerStatuses)
	set(st.ContainerStatuses)
	return st
}

// ReasonPulling is the reason of a False UpdateReady condition while the
// image of a changed container is being pulled and the container of its
// previous spec runs.
const ReasonPulling = "Pulling"

// withUpdatePull says, in a False UpdateReady condition (reason Pulling,
// the pull's progress in its message), that an update of p waits on an
// image pull under way while the container of the previous spec keeps
// running: a container whose status reports another image than its spec,
// with a pull of the spec's image under way. A blocked update's condition
// (a failed pull) is left as it is.
func withUpdatePull(st pod.Status, p *pod.Pod, pulls PullMessages) pod.Status {
	for _, c := range st.Conditions {
		if c.Type == pod.ConditionUpdateReady {
			return st
		}
	}
	for i := range st.ContainerStatuses {
		cs := &st.ContainerStatuses[i]
		if cs.State.Running == nil {
			continue
		}
		for _, c := range p.Spec.Containers {
			if c.Name != cs.Name || c.Image == cs.Image {
				continue
			}
			msg, ok := pulls.PullMessage(c.Image)
			if !ok {
				continue
			}
			st.Conditions = append(slices.Clone(st.Conditions), pod.Condition{
				Type: pod.ConditionUpdateReady, Status: "False", Reason: ReasonPulling,
				Message: fmt.Sprintf("container %s: the update waits on its image: %s; the container of its previous spec keeps running", c.Name, msg),
			})
			return st
		}
	}
	return st
}

// PodConditions gives one condition of a pod (nil when it has none).
type PodConditions interface {
	Condition(p *pod.Pod) *pod.Condition
}

// RolloutConditions gives the RolloutFailed condition of a pod whose
// failed spec is held back (nil when there is none), and the rollout
// state of a manifest file (nil when there is none).
type RolloutConditions interface {
	Condition(uid string) *pod.Condition
	File(o pod.Origin) *podview.ManifestRollout
}

// withCondition adds a condition (the rollout's, or PIDLimitReached) to st,
// and makes its reason the condition's (RolledBack, RolloutFailed,
// PIDLimitReached) unless st already has one.
func withCondition(st pod.Status, cond *pod.Condition) pod.Status {
	if cond == nil {
		return st
	}
	st.Conditions = append(st.Conditions, *cond)
	if st.Reason == "" {
		st.Reason, st.Message = cond.Reason, cond.Message
	}
	return st
}

// Pods returns every desired pod with its status, then the pods being
// removed (but for one the store wants again: that is an update of it),
// then the orphans.
func (v Served) Pods() []podview.View {
	pods := v.Store.Pods()
	out := make([]podview.View, 0, len(pods))
	desired := make(map[string]bool, len(pods))
	for _, p := range pods {
		desired[p.Metadata.UID] = true
		st := v.Loop.Status(p)
		if v.Rollouts != nil {
			st = withCondition(st, v.Rollouts.Condition(p.Metadata.UID))
		}
		if v.PIDLimits != nil {
			st = withCondition(st, v.PIDLimits.Condition(p))
		}
		if v.ImagesFromCache != nil {
			if c := v.ImagesFromCache.ImageFromCacheCondition(p); c != nil {
				st.Conditions = append(st.Conditions, *c)
			}
		}
		if v.Pulls != nil {
			st = withPullMessages(st, v.Pulls)
			st = withUpdatePull(st, p, v.Pulls)
		}
		out = append(out, podview.View{APIVersion: "v1", Kind: "Pod", Metadata: p.Metadata, Spec: p.Spec, Status: st})
	}
	for _, t := range v.Loop.Terminating() {
		if !desired[t.Metadata.UID] {
			out = append(out, t)
		}
	}
	return append(out, v.Loop.Orphans()...)
}

// Manifests returns the state of every manifest file.
func (v Served) Manifests() []podview.ManifestStatus {
	files := v.Store.Files()
	out := make([]podview.ManifestStatus, 0, len(files))
	var waits map[pod.Origin]podview.UpdateWaiting
	if v.Waits != nil {
		waits = v.Waits()
	}
	var waves map[pod.Origin]podview.WaveState
	if v.Waves != nil {
		waves = v.Waves()
	}
	for _, f := range files {
		m := podview.ManifestStatus{Source: f.Origin.Source, File: f.Origin.File, UIDs: f.UIDs,
			AppliedHash: f.AppliedHash, Hash: f.Hash, LastChange: f.LastChange, Version: f.Version}
		if v.Rollouts != nil {
			m.Rollout = v.Rollouts.File(f.Origin)
		}
		if f.Err != nil {
			m.Error = f.Err.Error()
		}
		if status, ok := v.Fetch[f.Origin.Source]; ok {
			fs := status()
			m.Fetch = &fs
		}
		if w, ok := waits[f.Origin]; ok {
			m.UpdateWaiting = &w
			delete(waits, f.Origin)
		}
		if w, ok := waves[f.Origin]; ok {
			m.Wave = &w
			delete(waves, f.Origin)
		}
		if r := m.Rollout; r != nil && r.FailedHash != "" && r.FailedHash == m.AppliedHash && (m.Wave == nil || m.Wave.State != "waiting") {
			w := podview.WaveState{State: "rolled_back", Version: r.FailedVersion,
				Reason: fmt.Sprintf("version %d rolled back to version %d: %s", r.FailedVersion, r.GoodVersion, r.Reason)}
			if m.Wave != nil && m.Wave.Version == r.FailedVersion {
				w.WaveIndex, w.Wave, w.WaveOpens = m.Wave.WaveIndex, m.Wave.Wave, m.Wave.WaveOpens
			}
			m.Wave = &w
		}
		out = append(out, m)
	}
	// A file new to the source has no state in the store until its
	// update is applied.
	for o, w := range waits {
		out = append(out, podview.ManifestStatus{Source: o.Source, File: o.File, UpdateWaiting: &w})
	}
	for o, w := range waves {
		if i := slices.IndexFunc(out, func(m podview.ManifestStatus) bool { return m.Source == o.Source && m.File == o.File }); i >= 0 {
			out[i].Wave = &w
		} else {
			out = append(out, podview.ManifestStatus{Source: o.Source, File: o.File, Wave: &w})
		}
	}
	// A URL that never answered (and has no checkpoint) has reported
	// nothing to the store, so that it removes nothing; its fetch state
	// must still show.
	for src, status := range v.Fetch {
		if !slices.ContainsFunc(out, func(m podview.ManifestStatus) bool { return m.Source == src }) {
			fs := status()
			out = append(out, podview.ManifestStatus{Source: src, File: src, Error: fs.Error, Fetch: &fs})
		}
	}
	return out
}
