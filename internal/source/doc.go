// Package source owns the manifest sources: it finds and reads manifest
// files and pushes full per-source snapshots, broken files included, into a
// Sink.
//
// Three sources exist. Dir (dir.go, inotify.go) is a drop-in directory
// watched with inotify, with a periodic rescan as a safety net. HTTP
// (http.go) polls one URL with conditional requests (ETag, Last-Modified),
// a size cap and a timeout; the headers it sends may come from a file
// (credentials.go, ReadHeaderFile), the body may be a signed bundle
// (package bundle), and the last accepted content is checkpointed on disk
// (checkpoint.go) so that its pods start after a reboot before the URL
// answers. The URL is shown only through redact.URL, never with its
// credentials. OCI (oci.go) polls a bundle artifact in an OCI registry
// through a resolver its caller gives it (containerd's docker resolver),
// with the same checkpoint. Both check a served bundle with bundle.Open,
// which "tug bundle pull" uses too.
//
// The header file and the TLS files (tls.go, ClientTLS) are read by the
// same functions for the status URL (package statusreport).
//
// It imports only internal/pod, internal/manifest, internal/redact,
// internal/clock, internal/atomicfile, internal/bundle, internal/timefloor
// (a TLS failure of a clock behind, in words),
// golang.org/x/sys/unix, containerd's core/remotes and pkg/reference,
// errdefs, the OCI image-spec and go-digest types, and the standard
// library; it must not import podconfig (it defines Sink instead),
// reconcile, the runtime packages or agent.
package source

import (
	"tug/internal/pod"
)

// Sink receives full snapshots from sources. Set gets every file the source
// currently sees, broken ones included (their Manifest.Err set), and does
// not block. podconfig.Store implements it.
type Sink interface {
	Set(source string, manifests []pod.SourceFile)
}
