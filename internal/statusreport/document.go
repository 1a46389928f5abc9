package statusreport

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"tug/internal/pod"
	"tug/internal/podview"
)

// APIVersion is the schema of the status document: its "apiVersion".
// Fields may be added within v1; none is removed or changes meaning.
const APIVersion = "tug.io/status/v1"

// Kind is the document's "kind".
const Kind = "NodeStatusReport"

// Document is the status document (docs/status.md, field by field). It
// is plain data: Build fills it, JSON is its wire form.
type Document struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// GeneratedAt is when the document was made; the only field that is
	// not compared to tell a change.
	GeneratedAt time.Time `json:"generatedAt"`
	TugVersion  string    `json:"tugVersion"`
	Node        Node      `json:"node"`
	Pods        []Pod     `json:"pods"`
	Sources     []Source  `json:"sources"`
	// SelfUpdate is tug's update of itself; nil when tug has no A/B
	// state (no release followed or installed).
	SelfUpdate *SelfUpdate `json:"selfUpdate,omitempty"`
}

// SelfUpdate is what became of tug's latest release on the device.
type SelfUpdate struct {
	// State is idle, downloading, waiting, trial, committed, reverted or
	// halted.
	State string `json:"state"`
	// Version is the release on trial, the one waiting, the one halted,
	// or that of the latest outcome.
	Version uint64 `json:"version,omitempty"`
	// Wave is the served release's place in its rollout when tug does
	// not switch to it now: waiting (for its wave, then the update
	// window), halted, or idle (no wave selects the device); nil
	// otherwise.
	Wave *Wave `json:"wave,omitempty"`
	// Slot is the A/B slot a waiting release is installed in, ahead.
	Slot string `json:"slot,omitempty"`
	// Committed is the release running as good (0: the installed tug).
	Committed uint64 `json:"committed,omitempty"`
	// Reason says why the latest release was reverted.
	Reason string `json:"reason,omitempty"`
	// Broken lists the releases reverted on the device, never tried again.
	Broken []uint64 `json:"broken,omitempty"`
}

// Node is the node: its name, the fingerprint of the key that signs its
// documents, its conditions and its device resources.
type Node struct {
	Name string `json:"name"`
	// KeyFingerprint is "sha256:" and the hex SHA-256 of the signing
	// key's public key in PKIX DER form; "" when documents are unsigned.
	KeyFingerprint string            `json:"keyFingerprint,omitempty"`
	Conditions     []NodeCondition   `json:"conditions"`
	Capacity       map[string]string `json:"capacity,omitempty"`
	Allocatable    map[string]string `json:"allocatable,omitempty"`
}

// NodeCondition is one node condition (MemoryPressure, DiskPressure,
// PIDPressure).
type NodeCondition struct {
	Type               string    `json:"type"`
	Status             string    `json:"status"`
	Reason             string    `json:"reason,omitempty"`
	Message            string    `json:"message,omitempty"`
	LastTransitionTime time.Time `json:"lastTransitionTime,omitzero"`
}

// Pod is one pod, compacted to what a fleet acts on.
type Pod struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	Phase     string `json:"phase"`
	// Reason is the pod's status reason (RolledBack, Blocked, Evicted...).
	Reason string `json:"reason,omitempty"`
	Ready  bool   `json:"ready"`
	// Restarts is the sum of its containers' restart counts.
	Restarts int32 `json:"restarts"`
	// LastTerminationReason is the reason of its containers' latest
	// termination (Error, OOMKilled, Completed...).
	LastTerminationReason string   `json:"lastTerminationReason,omitempty"`
	Rollout               *Rollout `json:"rollout,omitempty"`
}

// Rollout is a pod's rollout state: the outcome of its latest spec and
// the hashes of its last good and its failed spec.
type Rollout struct {
	// Outcome is Progressing, Succeeded, RolledBack, Failed or Superseded.
	Outcome    string `json:"outcome,omitempty"`
	GoodHash   string `json:"goodHash,omitempty"`
	FailedHash string `json:"failedHash,omitempty"`
	Reason     string `json:"reason,omitempty"`
}

// Source is one manifest source: the directory (its path) or the URL
// (redacted), with what it applies.
type Source struct {
	Name string `json:"name"`
	// Error is the URL's last fetch error; "" when the last one worked
	// (and always for the directory).
	Error string `json:"error,omitempty"`
	Files []File `json:"files"`
}

// File is one manifest file of a source (for a URL, the URL itself).
type File struct {
	File string `json:"file"`
	// AppliedHash is the digest of the content applied; Version the
	// signed bundle's version (0: a file or an unsigned body).
	AppliedHash string `json:"appliedHash,omitempty"`
	Version     uint64 `json:"version,omitempty"`
	// Error is why its latest content is not applied; "" when it is.
	Error string `json:"error,omitempty"`
	// GoodHash and FailedHash are the file's last good content and the
	// content in which a pod failed (held back when HeldBack).
	GoodHash   string `json:"goodHash,omitempty"`
	FailedHash string `json:"failedHash,omitempty"`
	HeldBack   bool   `json:"heldBack,omitempty"`
	// UpdateWaiting is the file's new content held for its update window;
	// nil when none waits.
	UpdateWaiting *UpdateWaiting `json:"updateWaiting,omitempty"`
	// Wave is the bundle's rollout on this device (its wave, its state);
	// nil when no rollout plan or halt concerns it.
	Wave *Wave `json:"wave,omitempty"`
}

// Wave is a source's place in a bundle rollout: State is idle (no wave
// selects the device), waiting (for its wave, then its update window),
// applied (in its wave), halted or rolled_back; Version the bundle version
// it is about; Index (from 1), Name and WaveOpens the device's wave in
// that version's plan; Opens when a held version is applied next; Reason
// a sentence.
type Wave struct {
	State     string    `json:"state"`
	Version   uint64    `json:"version,omitempty"`
	Index     int       `json:"index,omitempty"`
	Name      string    `json:"name,omitempty"`
	WaveOpens time.Time `json:"waveOpens,omitzero"`
	Opens     time.Time `json:"opens,omitzero"`
	Reason    string    `json:"reason,omitempty"`
}

// UpdateWaiting is a held update: Message says "update waiting for the
// window at <RFC 3339 time>", Opens is that time (absent when the window
// never opens).
type UpdateWaiting struct {
	Message string    `json:"message"`
	Opens   time.Time `json:"opens,omitzero"`
	Window  string    `json:"window"`
	Hash    string    `json:"hash,omitempty"`
	Version uint64    `json:"version,omitempty"`
	// WaveIndex, Wave and WaveOpens are the device's wave when the held
	// bundle has a rollout plan; Message then says "update waiting for
	// wave <n> "<name>" at <time>" while the wave is what it waits for.
	WaveIndex int       `json:"waveIndex,omitempty"`
	Wave      string    `json:"wave,omitempty"`
	WaveOpens time.Time `json:"waveOpens,omitzero"`
}

// Snapshot is what a document is built from, as the status API reads it.
type Snapshot struct {
	Node      podview.NodeView
	Pods      []podview.View
	Manifests []podview.ManifestStatus
	// Rollouts holds the rollout history of the pods that have one, by UID.
	Rollouts map[string]pod.RolloutHistory
}

// Build makes the document of s. It sorts what it lists (pods by
// namespace, name and UID; sources, files and conditions by name), so
// that one state always gives the same bytes. It does not keep or modify
// s. GeneratedAt, TugVersion and Node.KeyFingerprint are left for the
// caller.
func Build(s Snapshot) Document {
	d := Document{
		APIVersion: APIVersion,
		Kind:       Kind,
		Node: Node{
			Name:        s.Node.Metadata.Name,
			Conditions:  make([]NodeCondition, 0, len(s.Node.Status.Conditions)),
			Capacity:    s.Node.Status.Capacity,
			Allocatable: s.Node.Status.Allocatable,
		},
		Pods:    make([]Pod, 0, len(s.Pods)),
		Sources: []Source{},
	}
	for _, c := range s.Node.Status.Conditions {
		d.Node.Conditions = append(d.Node.Conditions, NodeCondition{Type: c.Type, Status: c.Status,
			Reason: c.Reason, Message: c.Message, LastTransitionTime: c.LastTransitionTime.UTC()})
	}
	slices.SortFunc(d.Node.Conditions, func(a, b NodeCondition) int { return strings.Compare(a.Type, b.Type) })
	for i := range s.Pods {
		d.Pods = append(d.Pods, buildPod(&s.Pods[i], s.Rollouts))
	}
	slices.SortFunc(d.Pods, func(a, b Pod) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name), strings.Compare(a.UID, b.UID))
	})
	bySource := map[string]*Source{}
	for _, m := range s.Manifests {
		src := bySource[m.Source]
		if src == nil {
			src = &Source{Name: m.Source, Files: []File{}}
			bySource[m.Source] = src
		}
		if m.Fetch != nil {
			src.Error = m.Fetch.Error
			if m.File == m.Source && m.AppliedHash == "" && m.Error == m.Fetch.Error {
				// A URL that has applied nothing yet: its fetch error is all
				// there is to say.
				continue
			}
		}
		f := File{File: m.File, AppliedHash: m.AppliedHash, Version: m.Version, Error: m.Error}
		if r := m.Rollout; r != nil {
			f.GoodHash, f.FailedHash, f.HeldBack = r.GoodHash, r.FailedHash, r.HeldBack
		}
		if u := m.UpdateWaiting; u != nil {
			f.UpdateWaiting = &UpdateWaiting{Opens: u.Opens.UTC(), Window: u.Window, Hash: u.Hash, Version: u.Version,
				Message: "update waiting for the window at " + u.Opens.UTC().Format(time.RFC3339)}
			if u.Opens.IsZero() {
				f.UpdateWaiting.Opens, f.UpdateWaiting.Message = time.Time{}, "update waiting for a window that never opens"
			}
			if u.WaveIndex > 0 {
				f.UpdateWaiting.Wave, f.UpdateWaiting.WaveIndex, f.UpdateWaiting.WaveOpens = u.Wave, u.WaveIndex, u.WaveOpens.UTC()
				if u.WaveOpens.Equal(u.Opens) {
					f.UpdateWaiting.Message = fmt.Sprintf("update waiting for wave %d %q at %s", u.WaveIndex, u.Wave, u.WaveOpens.UTC().Format(time.RFC3339))
				}
			}
		}
		if w := m.Wave; w != nil {
			f.Wave = &Wave{State: w.State, Version: w.Version, Index: w.WaveIndex, Name: w.Wave,
				WaveOpens: w.WaveOpens.UTC(), Opens: w.Opens.UTC(), Reason: w.Reason}
		}
		src.Files = append(src.Files, f)
	}
	for _, src := range bySource {
		slices.SortFunc(src.Files, func(a, b File) int { return strings.Compare(a.File, b.File) })
		d.Sources = append(d.Sources, *src)
	}
	slices.SortFunc(d.Sources, func(a, b Source) int { return strings.Compare(a.Name, b.Name) })
	return d
}

// buildPod compacts one pod view.
func buildPod(v *podview.View, rollouts map[string]pod.RolloutHistory) Pod {
	st := &v.Status
	p := Pod{Namespace: v.Metadata.Namespace, Name: v.Metadata.Name, UID: v.Metadata.UID,
		Phase: string(st.Phase), Reason: st.Reason}
	for _, c := range st.Conditions {
		if c.Type == pod.ConditionReady {
			p.Ready = c.Status == "True"
		}
	}
	var last time.Time
	for _, list := range [][]pod.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses} {
		for i := range list {
			c := &list[i]
			p.Restarts += c.RestartCount
			for _, t := range []*pod.StateTerminated{c.LastTerminationState.Terminated, c.State.Terminated} {
				if t != nil && !t.FinishedAt.Before(last) {
					last, p.LastTerminationReason = t.FinishedAt, t.Reason
				}
			}
		}
	}
	if h, ok := rollouts[v.Metadata.UID]; ok {
		r := &Rollout{GoodHash: h.GoodHash, FailedHash: h.Failed, Reason: h.Reason}
		if n := len(h.Entries); n > 0 {
			r.Outcome = h.Entries[n-1].Outcome
		}
		if *r != (Rollout{}) {
			p.Rollout = r
		}
	}
	return p
}

// key is the document's JSON without its time: two documents with the same
// key report the same state.
func (d Document) key() ([]byte, error) {
	d.GeneratedAt = time.Time{}
	return json.Marshal(d)
}
