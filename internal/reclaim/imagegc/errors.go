package imagegc

import "errors"

// ErrNotEnoughFreed means a collection removed every image it was allowed
// to and the image filesystem is still above the low threshold.
var ErrNotEnoughFreed = errors.New("imagegc: could not free the required space")

// ErrInvalidPolicy means the thresholds make no sense (low above high, or
// outside 0..100).
var ErrInvalidPolicy = errors.New("imagegc: invalid policy")
