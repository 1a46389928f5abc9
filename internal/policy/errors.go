package policy

import "errors"

// ErrBlocked is wrapped by every admission refusal (see Error).
var ErrBlocked = errors.New("policy: pod blocked by admission policy")

// ErrUnknownLevel is returned (wrapped) by ParseLevel.
var ErrUnknownLevel = errors.New("policy: unknown level")
