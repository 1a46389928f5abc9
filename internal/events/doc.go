// Package events keeps tug's recent Kubernetes-shaped events (Pulled,
// Created, Started, Killing, BackOff, Unhealthy, Evicted, FailedMount, ...)
// in a fixed-size in-memory ring, for `tug events`, GET /events and the last
// event of each pod in `tug inspect`.
//
// Ring implements the eventRecorder interface the emitting packages declare
// (Event(p, container, eventType, reason, message)); a repeat of the last
// event of the same object with the same reason and message bumps its count
// instead of taking a new slot, as the kubelet's event correlator does.
// Events are lost when tug stops: they are a troubleshooting aid, not a
// record.
//
// It imports only the standard library, tug/internal/pod and
// tug/internal/clock; only agent/ and api (for the Event type) import it.
package events
