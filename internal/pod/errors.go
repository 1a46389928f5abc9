package pod

import "errors"

// ErrInvalidQuantity is returned (wrapped) by ParseQuantity and
// Quantity.UnmarshalJSON for text that is not a Kubernetes quantity or whose
// value does not fit in int64 thousandths.
var ErrInvalidQuantity = errors.New("pod: invalid quantity")
