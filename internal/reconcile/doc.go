// Package reconcile owns the sync loop: it receives the pod store's ordered
// changes and the PLEG's container events, runs one worker goroutine per pod
// UID, and drives each pod towards its manifest: pinned namespaces, the pod's
// cgroup and place on the pod network, init containers one at a time to
// success, then the app containers, restarted with a crash back-off and
// recreated only when their spec hash changed; a removed pod is stopped and
// everything made for it removed. Each pod's status is podstatus.Compute
// of the runtime's containers and the notes the workers leave: a removed
// pod is listed as terminating (with its deletionTimestamp) until its
// worker has removed it, and an update whose new containers cannot start
// while the old ones run is the pod's False tug.io/UpdateReady condition.
//
// Before anything of a pod is created it is admitted, and it may be refused.
// Words, as in docs/decisions.md ("Vocabulary"): a pod the admission policy
// refuses is Blocked (status reason, with the violations as the message; a
// blocked update leaves the last admitted version running); a pod the node
// cannot hold now is refused with HostPortInUse (one of its hostPorts is
// taken) or OutOfpods (--max-pods pods run already) and starts by itself when
// the room is there. Housekeeping (housekeeping.go) removes containers and
// sandboxes of pods no source has any more, only once their source has
// reported; pods of a source that is no longer configured are Orphaned until
// every configured source has reported, then removed.
//
// Files: loop.go (Config, Loop, Run: the one select; --max-pods), worker.go
// (one goroutine per pod), sync.go (one pod's sync: admission, sandbox,
// then carrying out the plan package podplan computes), housekeeping.go
// (orphans and leftovers), notes.go (what workers learnt that the runtime
// cannot tell, and the podstatus.Notes made of it), interfaces.go (what it
// needs from others).
//
// A pod given devices reports the tug.io/DevicesReady condition; while one
// is gone (a FactsHook says which) its containers that exit wait with
// reason DeviceUnavailable instead of being restarted (devices.go).
//
// The optional parts of a sync (probes, lifecycle handlers, devices, image
// pre-pull and repair, eviction's readmission, in-place resize) are hooks
// (hook.go): listed in order in Config.Hooks, each implementing the stages
// it takes part in.
//
// It declares the small interfaces it needs (Runtime, Sandbox, Network,
// Cgroups, Ownership, Admission, the hook stages) and imports pod, podconfig and pleg (for
// their change and event types), podplan, clock and redact only; never podruntime,
// network, qos, policy or source, which agent/ connects to it.
package reconcile
