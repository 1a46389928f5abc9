// Package source owns the manifest sources: it finds and reads manifest
// files (a drop-in directory watched with inotify, with a periodic rescan as
// a safety net) and pushes full per-source snapshots, broken files included,
// into a Sink.
//
// It imports only internal/pod, golang.org/x/sys/unix and the standard
// library; it must not import podconfig (it defines Sink instead),
// reconcile, the runtime packages or agent.
package source

import (
	"context"

	"tug/internal/pod"
)

// Sink receives full snapshots from sources. Set gets every file the source
// currently sees, broken ones included (their Manifest.Err set), and may
// block until the snapshot is taken in or ctx is done. podconfig.Store
// implements it.
type Sink interface {
	Set(ctx context.Context, source string, manifests []pod.Manifest)
}
