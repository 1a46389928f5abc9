package specopts

import "errors"

var (
	// ErrPrivilegedNotAllowed means a container asks for privileged mode but
	// the agent runs without --allow-privileged.
	ErrPrivilegedNotAllowed = errors.New("specopts: privileged containers are not allowed")
	// ErrNoCommand means neither the manifest nor the image gives a command
	// to run.
	ErrNoCommand = errors.New("specopts: no command specified")
)
