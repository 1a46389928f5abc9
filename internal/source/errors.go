package source

import "errors"

// ErrTooLarge is the error (wrapped with the path and size) of a manifest
// file larger than the configured limit.
var ErrTooLarge = errors.New("source: manifest file too large")

// ErrRedirect is the error of a redirect tug refuses to follow (https to
// http, too many hops).
var ErrRedirect = errors.New("source: redirect refused")
