package source

import "errors"

// ErrTooLarge is the error (wrapped with the path and size) of a manifest
// file larger than the configured limit.
var ErrTooLarge = errors.New("source: manifest file too large")
