package eviction

import "errors"

// ErrInvalidThreshold means an --eviction-hard, --eviction-soft or
// --eviction-soft-grace-period value does not parse or makes no sense.
var ErrInvalidThreshold = errors.New("eviction: invalid threshold")

// ErrUnreadable means a node signal's source (/proc/meminfo, /proc/loadavg)
// did not have the expected fields.
var ErrUnreadable = errors.New("eviction: signal not readable")
