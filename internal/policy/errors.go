package policy

import "errors"

// ErrBlocked is wrapped by every admission refusal (see Error).
var ErrBlocked = errors.New("policy: pod blocked by admission policy")

// ErrUnknownLevel is returned (wrapped) by ParseLevel.
var ErrUnknownLevel = errors.New("policy: unknown level")

// ErrNodeMismatch is wrapped by a refusal for the node's labels or taints
// (see NodeMismatch).
var ErrNodeMismatch = errors.New("policy: pod does not match the node")

// ErrBadNodeSetting is returned (wrapped) by ParseNodeLabels and
// ParseTaints.
var ErrBadNodeSetting = errors.New("policy: bad node label or taint")
