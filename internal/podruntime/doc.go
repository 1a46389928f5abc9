// Package podruntime is tug's containerd adapter: it creates a pod's
// containers labelled with the pod's identity (package podlabels) and runs
// their tasks, reads the labelled containers back as pod.RuntimeContainer
// values (listing, events, exit status, termination messages), groups
// their shims, and holds a pod's PID namespace when its containers share
// one; package podexec runs commands in their tasks. A container start is
// a sequence of steps, each one call into a package of its own: images
// makes the image present, volume prepares and stages what the container
// mounts, specopts builds its OCI spec, and podlogs sets up where its
// output goes. The image and volume managers and the file log drivers'
// converter are built by the caller and handed in as the narrow interfaces
// Images, Volumes and Logs (managers.go); what else reads them (the image
// GC, the API, the eviction manager, housekeeping, the log metrics) uses
// them directly, not through the runtime, and the converter asks the
// runtime what it needs of the tasks through LogTasks. Dial connects to
// containerd.
//
// containerd is the source of truth: containers are found by their labels
// (prefix "io.tug."), never by memory alone, so a restarted agent adopts
// what is already running.
//
// It never imports reconcile, network or qos.
package podruntime
