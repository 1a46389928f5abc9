// Package images makes the images of a pod's containers present in
// containerd's store, unpacked for the snapshotter: registry pulls that
// honour imagePullPolicy (one pull per reference shared by concurrent
// callers, credentials from the pod's pull secrets and the node's
// config.json, through the resolvers of package registry: hosts.toml
// mirrors and TLS, the node's download cap), imports of sideloaded OCI and docker archives from the
// image directory, and the store operations the image GC needs (list by
// digest, remove, where the image filesystem is). Ensure is the entry
// point of a container start, and the one place that records the events
// of a container's image (Pulling, Pulled, Failed). A registry pull is
// followed as it fetches (the bytes of its blobs, PullMessage) and cut by
// a watchdog when it makes no progress for PullProgressDeadline or runs
// for PullTimeout; a failed pull keeps what it fetched under a lease of
// its reference, and the next pull resumes from it (pull.go, "Partial
// pulls"); those leftovers are counted and freed by PullLeftovers and
// FreePullLeftovers (leftovers.go). A pull checks, before it fetches a
// layer, that the image fits on the image filesystem above its eviction
// thresholds (Config.Room), and waits (PullDeferredError) when it does not;
// it is cut when the room runs out while it runs (room.go). An imagePullPolicy Always pull that reaches no registry host
// runs the image present, as Config.PullOffline says (offline.go). Every
// unpack is synced to disk before its pull or import is reported done
// (durable.go). An image a power cut damaged (an entrypoint missing, empty
// or NUL-filled in its snapshot, a blob that does not verify) is found by
// CheckEntrypoint and CheckContent (damage.go) and removed and fetched
// again by Repair (repair.go).
package images
