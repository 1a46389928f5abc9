// Package podruntime is tug's containerd adapter: it makes images present
// (registry pulls honouring imagePullPolicy, and sideloaded OCI/docker
// archives), builds each container's OCI spec from the pod manifest with its
// own oci.SpecOpts, creates containers labelled with the pod's identity,
// runs their tasks with output going to CRI-format log files through a
// logging binary run by the shim, and reads the labelled containers back as
// pod.RuntimeContainer values. It also prepares and cleans up what a pod's
// containers mount (emptyDir and hostPath volumes, /etc/hostname). subPath
// and hostPath mounts are opened without following symlinks out of their
// volume and the opened object is what runc mounts (see podMounts), so a
// container that races symlinks into a shared volume cannot redirect them.
//
// containerd is the source of truth: containers are found by their labels
// (prefix "io.tug."), never by memory alone, so a restarted agent adopts
// what is already running.
//
// It imports pod, objects, clock, the containerd v1 client with the libraries of its API
// (typeurl, image-spec, runtime-spec, distribution/reference) and
// golang.org/x/sys/unix; never reconcile, network or qos.
package podruntime
