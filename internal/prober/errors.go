package prober

import "errors"

var (
	// ErrNoHandler means a probe or hook has no action set.
	ErrNoHandler = errors.New("prober: no handler")
	// ErrPortNotFound means a probe names a port the container does not
	// have.
	ErrPortNotFound = errors.New("prober: port name not found")
	// ErrNoExecer means an exec action was given a Target without an
	// Execer.
	ErrNoExecer = errors.New("prober: no execer for an exec action")
)
