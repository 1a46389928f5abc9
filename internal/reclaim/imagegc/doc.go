// Package imagegc is tug's image garbage collector, modelled on the
// kubelet's image manager (pkg/kubelet/images/image_gc_manager.go): when
// the image filesystem is used above a high threshold (percent), it removes
// the least recently used images that nothing needs until usage is back
// under the low threshold, never an image younger than a minimum age.
//
// An image is needed, and never removed, when a container uses it, a pod
// wanted by a source or kept in the URL checkpoint names it (offline boot
// must find it), or its store marks it pinned (a sideloaded archive still
// in the image directory: docs/decisions.md, "Reclaim").
//
// What failed pulls keep for resuming (Leftovers) is counted at every
// collection and freed first, before any image, whenever space is freed:
// a collection above the high threshold, DeleteUnusedImages (the eviction
// manager's reclaim) and MakeRoom (a pull that does not fit).
//
// It reads and acts only through the small interfaces it declares
// (Images, InUse, FS); it imports pod, clock and the Prometheus client,
// never a runtime adapter, reconcile or agent.
package imagegc
