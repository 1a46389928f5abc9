// Package objects resolves a pod's references to the objects of its own
// source into plain values, when a container starts: the environment of a
// container (env valueFrom, envFrom), the files of configMap, secret,
// projected and downwardAPI volumes, and the downward API's field and
// resource values.
//
// It reads what pod.Bind attached to the pod (pod.Pod.Bound); finding the
// objects is the store's job. A missing object or key that is not optional
// is a *MissingError, which wraps pod.ErrCreateContainerConfig as the
// kubelet's CreateContainerConfigError does. A claim resolves to the key
// of the directory the runtime backs it with (Claim).
//
// Every function is pure: a function of the pod, its bound objects and the
// node (NodeInfo), with no I/O and no package state. It imports package pod
// and the standard library.
package objects
