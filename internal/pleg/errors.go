package pleg

import "errors"

// ErrUnhealthy means no relist has succeeded for longer than the
// HealthyAfter threshold, or none has succeeded yet. Healthy wraps it with
// the details.
var ErrUnhealthy = errors.New("pleg: not healthy")
