// Package devices owns the node's devices: the extended resources a node
// declares (--device-resource NAME=SELECTOR), each unit a host device node
// matched by a glob or a CDI device of one class; their exclusive
// allocation to pods, persisted under the root dir so that it survives a
// restart; the refusal of a pod that asks for more than is free (the
// kubelet's OutOf<resource> status); and the Container Device Interface
// registry (CDI spec directories, refreshed when they change) that injects
// CDI devices into a container's OCI spec. Its Run watches the device
// directories and the CDI spec directories (inotify) and tells each change
// on Changes; Gone says which of a container's devices are no longer
// there (hot-plug).
//
// It imports tug/internal/pod, the CDI library and the OCI runtime spec;
// never podruntime, reconcile or policy. agent/ builds a Manager and hands
// it to podruntime (the devices of a container) and to admission.
package devices
