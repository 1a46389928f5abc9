// Package network owns a pod's sandbox namespaces: the network, IPC and UTS
// namespaces tug creates for each pod and pins with bind mounts under
// <run-dir>/ns/<uid>/, so that the pod's containers join them by path and no
// pause container is needed. (Bridge, veth and IPAM come later.)
//
// It imports pod, golang.org/x/sys/unix and the standard library; never
// reconcile, podruntime or qos.
package network
