// Package eviction is tug's eviction manager, modelled on the kubelet's
// (pkg/kubelet/eviction): every period it observes the node's signals
// (memory.available, nodefs.available, nodefs.inodesFree, imagefs.available,
// imagefs.inodesFree, pid.available), compares them with the hard and soft
// thresholds (kubelet syntax: "memory.available<100Mi,nodefs.available<10%"),
// sets the node conditions MemoryPressure, DiskPressure and PIDPressure, and
// under pressure first reclaims node-level resources (unused images, dead
// containers) and then evicts at most one pod per pass in the kubelet's
// order: pods using more than they request first, then lower priority, then
// larger usage. A pod at or above the system-critical priority is never
// evicted. It also evicts a pod whose emptyDir outgrows its sizeLimit or
// whose container outgrows its ephemeral-storage limit, as the kubelet does.
//
// It reads the node through an Observer (NodeObserver reads /proc and
// statfs), the pods and their usage through small interfaces it declares,
// and acts through an Evicter; it imports pod, clock and the Prometheus
// client only, never reconcile, a runtime adapter or agent.
package eviction
