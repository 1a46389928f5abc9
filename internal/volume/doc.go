// Package volume owns everything mounted into a pod's containers, under
// <root-dir>/pods/<uid>/ and the claim directories: emptyDir (disk or
// tmpfs) and hostPath volumes with their type checks, PersistentVolumeClaim
// directories per source, configMap, secret, projected and downwardAPI
// volumes written atomically (the kubelet's ..data swap), the pod's
// /etc/hostname, /etc/hosts and /etc/resolv.conf, termination message
// files, fsGroup ownership, the disk usage of emptyDirs, and image volumes
// (a read-only snapshot view of the image, made through containerd's
// snapshots service, mounted once per pod: imageviews.go; package images
// makes the image present). Paths from a
// manifest are hostile: a subPath or hostPath is opened beneath its root
// without following symlinks out of it, and the opened object is what
// runc mounts (staged under the pod's directory); directory walks hold a
// bounded number of descriptors.
package volume
