package bundle

import "errors"

// Errors of signed bundles (see Envelope).
var (
	// ErrNotEnvelope: a verify key is configured and the body is not a
	// signed bundle (a bare manifest, or an old body with a detached
	// signature, which cannot be protected against replay).
	ErrNotEnvelope = errors.New("bundle: not a signed bundle (tug-envelope-v1)")
	// ErrBadEnvelope: the bundle's structure or header is wrong.
	ErrBadEnvelope = errors.New("bundle: malformed signed bundle")
	// ErrRollback: the bundle's version is lower than the one applied.
	ErrRollback = errors.New("bundle: older than the applied one")
	// ErrExpired: the bundle's notAfter has passed.
	ErrExpired = errors.New("bundle: expired")
	// ErrOtherNode: the bundle's node selector does not match this node.
	ErrOtherNode = errors.New("bundle: for other nodes")
	// ErrTooLarge: a blob of the bundle artifact is larger than the
	// limit.
	ErrTooLarge = errors.New("bundle: too large")
)
