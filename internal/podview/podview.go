// Package podview owns the shapes tug's status API serves, which the CLI,
// the status reporter and the tests read: a pod with its status (View),
// the pod list, the node, and the state of each manifest file and URL.
// They are Kubernetes-shaped where Kubernetes has the object; the types
// they are made of (the manifest's, the observed status) are package
// pod's.
package podview

import (
	"time"

	"tug/internal/pod"
)

// View is a pod as the API shows it: its manifest and its observed status,
// shaped like a Kubernetes Pod object.
type View struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   pod.ObjectMeta `json:"metadata"`
	Spec       pod.PodSpec    `json:"spec"`
	Status     pod.Status     `json:"status"`
}

// List is a Kubernetes-shaped PodList.
type List struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Items      []View `json:"items"`
}

// ManifestStatus is the state of one manifest file (or URL) of a source:
// what the API's /manifests reports.
type ManifestStatus struct {
	Source      string    `json:"source"`
	File        string    `json:"file"`
	Error       string    `json:"error,omitempty"` // "" when the file is good
	UIDs        []string  `json:"uids,omitempty"`  // pods of this file that are applied
	AppliedHash string    `json:"appliedHash,omitempty"`
	Hash        string    `json:"hash,omitempty"` // content last seen
	LastChange  time.Time `json:"lastChange"`
	// Version is the signed bundle version of the applied content (0 for
	// a file or an unsigned body).
	Version uint64 `json:"version,omitempty"`
	// Fetch is the state of a URL source's polling (nil for files).
	Fetch *FetchStatus `json:"fetch,omitempty"`
	// Rollout is the rollout state of the file: its last good
	// and its failed content; nil when tug has none.
	Rollout *ManifestRollout `json:"rollout,omitempty"`
	// UpdateWaiting is the file's update held for its update window; nil
	// when none waits.
	UpdateWaiting *UpdateWaiting `json:"updateWaiting,omitempty"`
	// Wave is the URL bundle's place in its rollout plan or halt; nil
	// when neither concerns the device.
	Wave *WaveState `json:"wave,omitempty"`
}

// WaveState is a source's place in a bundle rollout (README "Updating a
// fleet").
type WaveState struct {
	// State is idle, waiting, applied, halted or rolled_back.
	State string `json:"state"`
	// Version is the bundle version the state is about.
	Version uint64 `json:"version,omitempty"`
	// WaveIndex (from 1), Wave and WaveOpens are the device's wave in
	// that version's plan and when it opens.
	WaveIndex int       `json:"waveIndex,omitempty"`
	Wave      string    `json:"wave,omitempty"`
	WaveOpens time.Time `json:"waveOpens,omitzero"`
	// Opens is when the held version is applied next (its wave, then its
	// update window); zero when it never is.
	Opens  time.Time `json:"opens,omitzero"`
	Reason string    `json:"reason,omitempty"`
}

// UpdateWaiting is a manifest file's (or URL bundle's) new content, held
// until the update window opens: the pods run the applied content.
type UpdateWaiting struct {
	// Opens is the window's next opening; zero when it never opens.
	Opens time.Time `json:"opens,omitzero"`
	// Window is the window as written (--update-window, or the bundle's).
	Window string `json:"window"`
	// Hash and Version are the held content's ("" for a removed file).
	Hash    string `json:"hash,omitempty"`
	Version uint64 `json:"version,omitempty"`
	// Prefetched reports that its images are pulled already.
	Prefetched bool `json:"prefetched,omitempty"`
	// WaveIndex (from 1), Wave and WaveOpens are the device's wave in the
	// held bundle's rollout plan; Opens is then the later of the wave's
	// opening and the window's next opening after it.
	WaveIndex int       `json:"waveIndex,omitempty"`
	Wave      string    `json:"wave,omitempty"`
	WaveOpens time.Time `json:"waveOpens,omitzero"`
}

// ManifestRollout is the rollout state of one manifest file or URL
// bundle: the last content whose pods were all good at once, and the
// content in which a pod failed (held back when the file is atomic).
type ManifestRollout struct {
	Atomic        bool   `json:"atomic,omitempty"`
	GoodHash      string `json:"goodHash,omitempty"`
	GoodVersion   uint64 `json:"goodVersion,omitempty"`
	FailedHash    string `json:"failedHash,omitempty"`
	FailedVersion uint64 `json:"failedVersion,omitempty"`
	Reason        string `json:"reason,omitempty"`
	// HeldBack reports whether the failed content is held back: the
	// file's pods run its good content.
	HeldBack bool `json:"heldBack,omitempty"`
}

// FetchStatus is what an HTTP manifest source last saw of its URL, or an
// OCI source of its reference. For an OCI source, FullResponses counts the
// artifacts pulled and NotModified the polls whose digest was the one
// applied (or refused); HTTPStatus, ETag and LastModified stay empty.
type FetchStatus struct {
	LastFetch      time.Time `json:"lastFetch"`                // when the last request ended
	LastSuccess    time.Time `json:"lastSuccess,omitempty"`    // last 200 or 304
	HTTPStatus     int       `json:"httpStatus,omitempty"`     // of the last response (0: none)
	Error          string    `json:"error,omitempty"`          // of the last request, "" when it worked
	ETag           string    `json:"etag,omitempty"`           // of the accepted content
	LastModified   string    `json:"lastModified,omitempty"`   // of the accepted content
	FullResponses  int64     `json:"fullResponses"`            // 200s received since start
	NotModified    int64     `json:"notModified"`              // 304s received since start
	CheckpointTime time.Time `json:"checkpointTime,omitempty"` // when the accepted content was fetched (as checkpointed)
	FromCheckpoint bool      `json:"fromCheckpoint,omitempty"` // the pods come from the checkpoint, nothing fetched yet
	// Digest is the OCI source's applied artifact (manifest) digest; ""
	// for a URL.
	Digest string `json:"digest,omitempty"`
}

// NodeView is the node as GET /node shows it: a Kubernetes-shaped Node
// named by the host name, with the conditions tug computes.
type NodeView struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   NodeMeta       `json:"metadata"`
	Status     pod.NodeStatus `json:"status"`
}

// NodeMeta names the node.
type NodeMeta struct {
	Name string `json:"name"`
}
