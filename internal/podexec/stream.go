package podexec

import (
	"context"
	"fmt"
	"io"
	"strings"
	"syscall"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Streams are the streams of an interactive exec (tug exec).
type Streams struct {
	// Stdin feeds the command's stdin, closed when it ends; nil: none.
	Stdin io.Reader
	// Stdout and Stderr receive its output; with TTY the terminal sends
	// both to Stdout.
	Stdout, Stderr io.Writer
	// TTY gives the command a terminal of Width columns and Height rows
	// (0: the runtime's default).
	TTY           bool
	Width, Height uint16
}

// StartError is a command that Exec could not start. Its ExitCode is
// what a shell says of such a command: 127 when it is not found, 126 when
// it cannot be run.
type StartError struct {
	Code int
	Err  error
}

func (e *StartError) Error() string { return e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }

// ExitCode is 126 or 127.
func (e *StartError) ExitCode() int { return e.Code }

// Process is a command that Exec started. Its methods are safe for
// concurrent use; Wait is called once.
type Process struct {
	r      *Execer
	id     string // the container's
	execID string
	ctx    context.Context // the caller's: its end kills the process
	nsctx  context.Context // for containerd calls, never canceled
	proc   containerd.Process
	exited <-chan containerd.ExitStatus
}

// Exec starts cmd in container id's task as the container's process (its
// user, environment, working directory and capabilities), with the
// streams s, and returns it running. When ctx ends, the process is killed
// (SIGKILL) and Wait returns: no exec process outlives its caller. A
// command that cannot be started is an *StartError.
func (r *Execer) Exec(ctx context.Context, id string, cmd []string, s Streams) (*Process, error) {
	if len(cmd) == 0 {
		return nil, fmt.Errorf("exec in %s: empty command", id)
	}
	nsctx := r.ctx(context.WithoutCancel(ctx))
	task, spec, err := r.execTarget(nsctx, id)
	if err != nil {
		return nil, err
	}
	pspec := *spec
	pspec.Args = cmd
	pspec.Terminal = s.TTY
	pspec.ConsoleSize = nil
	if s.TTY && s.Width > 0 && s.Height > 0 {
		pspec.ConsoleSize = &specs.Box{Width: uint(s.Width), Height: uint(s.Height)}
	}
	e := &Process{r: r, id: id, execID: newExecID(), ctx: ctx, nsctx: nsctx}
	// The end of stdin closes the process's: containerd's shim holds the
	// stdin fifo open for writing until it is told to (CloseIO), as ctr
	// exec does it.
	started := make(chan struct{})
	var stdin io.Reader
	if s.Stdin != nil {
		stdin = &stdinCloser{r: s.Stdin, close: func() {
			<-started
			if e.proc == nil {
				return // never created
			}
			if err := e.proc.CloseIO(nsctx, containerd.WithStdinCloser); err != nil && !errdefs.IsNotFound(err) {
				r.log.Debug("close exec stdin", "container", id, "exec", e.execID, "err", err)
			}
		}}
	}
	opts := []cio.Opt{cio.WithStreams(stdin, s.Stdout, s.Stderr)}
	if s.TTY {
		opts = append(opts, cio.WithTerminal)
	}
	proc, err := task.Exec(nsctx, e.execID, &pspec, cio.NewCreator(opts...))
	if err != nil {
		close(started)
		return nil, fmt.Errorf("exec in %s: %w", id, err)
	}
	e.proc = proc
	close(started)
	if e.exited, err = proc.Wait(nsctx); err != nil {
		e.delete()
		return nil, fmt.Errorf("exec in %s: %w", id, err)
	}
	if err := proc.Start(nsctx); err != nil {
		e.delete()
		return nil, &StartError{Code: startFailureCode(err), Err: fmt.Errorf("exec in %s: start %q: %w", id, cmd[0], err)}
	}
	return e, nil
}

// startFailureCode is the exit code a shell gives a command runc could not
// start: 127 when it does not exist, 126 otherwise (not executable, a
// directory). runc's reason crosses the shim's ttrpc API as text only, so
// the text is what there is to read.
func startFailureCode(err error) int {
	msg := err.Error()
	if strings.Contains(msg, "executable file not found") || strings.Contains(msg, syscall.ENOENT.Error()) {
		return 127
	}
	return 126
}

// Resize sets the size of the process's terminal (no-op without one).
func (e *Process) Resize(ctx context.Context, width, height uint16) error {
	if err := e.proc.Resize(e.r.ctx(ctx), uint32(width), uint32(height)); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("resize exec in %s: %w", e.id, err)
	}
	return nil
}

// Wait waits for the process to exit and its output to be copied, deletes
// it, and returns its exit code. When Exec's ctx ends first the process is
// killed, waited for and deleted, and the error wraps ctx.Err().
func (e *Process) Wait() (int, error) {
	defer e.delete()
	select {
	case st := <-e.exited:
		e.proc.IO().Wait()
		code, _, err := st.Result()
		if err != nil {
			return 0, fmt.Errorf("exec in %s: %w", e.id, err)
		}
		return int(code), nil
	case <-e.ctx.Done():
		if err := e.proc.Kill(e.nsctx, syscall.SIGKILL); err != nil && !errdefs.IsNotFound(err) {
			e.r.log.Warn("kill exec process", "container", e.id, "exec", e.execID, "err", err)
		}
		kctx, cancel := context.WithTimeout(e.nsctx, killTimeout)
		defer cancel()
		select {
		case <-e.exited:
		case <-kctx.Done():
		}
		e.proc.IO().Cancel()
		return 0, fmt.Errorf("exec in %s: %w", e.id, e.ctx.Err())
	}
}

// delete removes the exec process (killing it if it still runs), on a
// context of its own.
func (e *Process) delete() {
	dctx, cancel := context.WithTimeout(e.nsctx, cleanupTimeout)
	defer cancel()
	if _, err := e.proc.Delete(dctx, containerd.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
		e.r.log.Warn("delete exec process", "container", e.id, "exec", e.execID, "err", err)
	}
}

// stdinCloser calls close once its reader has ended (EOF or an error),
// before returning the end to the copy that reads it.
type stdinCloser struct {
	r     io.Reader
	close func()
	done  bool
}

func (s *stdinCloser) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && !s.done {
		s.done = true
		s.close()
	}
	return n, err
}
