// Package rollout owns each pod's rollout state: the last good
// spec (the spec that was last Ready for the minimum time with no
// restart), the spec being watched since it was applied, the spec that
// failed and is held back, and a short history. The state is persisted,
// one file per pod, under <root-dir>/rollout/ and read before the sources
// report, so that a spec that failed before a restart is never started
// again and a rollout cut by a crash goes on.
//
// The Controller judges every pod the sources want (podconfig.Store's
// Wanted) by its progress (reconcile.Loop's Progress): an update fails
// when the pod is not Ready within its timeout, a container restarts more
// than the allowed number of times, an image cannot be pulled or a
// container cannot be created. A failed update is rolled back through
// the pod store (a podconfig.Pin), so the data flows one way: the store
// sends the sync loop an ordinary update back to the last good spec,
// which it applies in place (same sandbox, same IP, same volumes; only
// the changed containers are recreated). The failed spec is not tried
// again until its content changes.
//
// It imports tug/internal/pod, tug/internal/clock, tug/internal/podconfig
// (Pin, Desired), tug/internal/reconcile (Progress) and client_golang;
// only agent/ imports it.
package rollout
