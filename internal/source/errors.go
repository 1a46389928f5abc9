package source

import "errors"

// ErrTooLarge is the error (wrapped with the path and size) of a manifest
// file larger than the configured limit.
var ErrTooLarge = errors.New("source: manifest file too large")

// Errors of the manifest URL's signed bundles (see Envelope) and of its
// transport.
var (
	// ErrNotEnvelope: a verify key is configured and the body is not a
	// signed bundle (a bare manifest, or an old body with a detached
	// signature, which cannot be protected against replay).
	ErrNotEnvelope = errors.New("source: not a signed bundle (tug-envelope-v1)")
	// ErrBadEnvelope: the bundle's structure or header is wrong.
	ErrBadEnvelope = errors.New("source: malformed signed bundle")
	// ErrRollback: the bundle's version is lower than the one applied.
	ErrRollback = errors.New("source: bundle older than the applied one")
	// ErrExpired: the bundle's notAfter has passed.
	ErrExpired = errors.New("source: bundle expired")
	// ErrOtherNode: the bundle's node selector does not match this node.
	ErrOtherNode = errors.New("source: bundle is for other nodes")
	// ErrRedirect: a redirect tug refuses to follow (https to http, too
	// many hops).
	ErrRedirect = errors.New("source: redirect refused")
)
