package api

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"syscall"
)

var (
	// ErrNotFound: no pod has the name asked for.
	ErrNotFound = errors.New("api: not found")
	// ErrAmbiguous: a manifest name matches more than one pod.
	ErrAmbiguous = errors.New("api: ambiguous name")
	// ErrConflict: the request cannot be done in the pod's state (a
	// rollback of a pod with no last good spec).
	ErrConflict = errors.New("api: conflict")
	// ErrNotLoopback: the health address would listen beyond loopback.
	ErrNotLoopback = errors.New("api: address is not loopback")
	// ErrSocketInUse: another process answers on the socket path.
	ErrSocketInUse = errors.New("api: socket in use")
	// ErrUnreachable: the client could not connect to tug's socket.
	ErrUnreachable = errors.New("api: tug unreachable")
	// ErrBadRequest: the request cannot be answered as asked (a bad log
	// option, no such container, no previous attempt).
	ErrBadRequest = errors.New("api: bad request")
)

// StatusError is an answer from tug other than 200 OK. Its message is the
// server's "error" text; errors.Is matches ErrNotFound for 404 and
// ErrAmbiguous for 409.
type StatusError struct {
	Code    int
	Message string
}

func (e *StatusError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("tug answered %d %s", e.Code, http.StatusText(e.Code))
	}
	return e.Message
}

// Is reports whether the status code is the one target stands for.
func (e *StatusError) Is(target error) bool {
	switch target {
	case ErrNotFound:
		return e.Code == http.StatusNotFound
	case ErrAmbiguous:
		return e.Code == http.StatusConflict
	case ErrBadRequest:
		return e.Code == http.StatusBadRequest
	}
	return false
}

// UnreachableError is a failed connection to tug's socket. Its message says
// what the operator should check; errors.Is matches ErrUnreachable, and Err
// is the dial error.
type UnreachableError struct {
	SocketPath string
	Err        error
}

func (e *UnreachableError) Error() string {
	switch {
	case errors.Is(e.Err, fs.ErrNotExist), errors.Is(e.Err, syscall.ECONNREFUSED):
		return fmt.Sprintf("cannot reach tug at %s: is it running?", e.SocketPath)
	case errors.Is(e.Err, fs.ErrPermission):
		return fmt.Sprintf("cannot reach tug at %s: permission denied (the socket is root only)", e.SocketPath)
	}
	return fmt.Sprintf("cannot reach tug at %s: %v", e.SocketPath, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// Is reports whether target is ErrUnreachable.
func (e *UnreachableError) Is(target error) bool { return target == ErrUnreachable }
