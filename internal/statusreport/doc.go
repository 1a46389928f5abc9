// Package statusreport owns the node's status upstream: the status
// document a device behind NAT pushes to its fleet's HTTPS endpoint
// (--status-url), how it is built from what the status API reads, how it
// is signed, and when it is sent. docs/status.md is its schema and rules.
//
// Build is a pure function from a Snapshot (the node, the pods, the
// manifest files and the pods' rollout histories, as GET /node, /pods,
// /manifests and .../history show them) to a Document. A Sender looks at
// that state every MinInterval and POSTs the document when it differs
// from the last one delivered (its time aside) or when the heartbeat is
// due; a failed POST is retried with exponential back-off, and each retry
// sends the document of that moment, never a queue of older ones. A
// Signer wraps the document in tug's signed envelope (the format `tug
// sign` writes, see bundle.SealEnvelope) with a persisted, increasing
// sequence number as its version.
//
// It reads through the small interfaces it declares (StatusSource,
// NodeSource, RolloutSource), which the agent fills with what it gives
// the API. It imports pod, clock, source (the envelope and the keys) and
// the Prometheus client; only agent/ imports it.
package statusreport
