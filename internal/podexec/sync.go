package podexec

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"syscall"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Execer runs commands in containers' tasks of one containerd namespace.
// Its methods are safe for concurrent use.
type Execer struct {
	client    *containerd.Client
	namespace string
	log       *slog.Logger
}

// New returns an Execer on client for the containers of namespace,
// logging what it cannot clean up to log.
func New(client *containerd.Client, namespace string, log *slog.Logger) *Execer {
	return &Execer{client: client, namespace: namespace, log: log}
}

// Errors of an exec's container.
var (
	// ErrNoContainer means there is no container with the given ID.
	ErrNoContainer = errors.New("podexec: container not found")
	// ErrNoTask means the container has no task to run a command in.
	ErrNoTask = errors.New("podexec: container has no task")
)

// Timeouts of the clean-up of an exec process, on a context of its own.
const (
	killTimeout    = 10 * time.Second // for the killed process to exit
	cleanupTimeout = 30 * time.Second // for its deletion
)

func (r *Execer) ctx(ctx context.Context) context.Context {
	return namespaces.WithNamespace(ctx, r.namespace)
}

// execOutputMax bounds the output kept of an exec (probes and hooks keep
// the first 10 KiB for their message; the rest is read and dropped).
const execOutputMax = 64 << 10

// ExecSync runs cmd in container id's task, as the container's process
// (its user, environment, working directory and capabilities), waits for
// it and returns its exit code and its combined stdout and stderr (the
// first 64 KiB). When ctx ends first the exec process is killed (SIGKILL),
// waited for and deleted, and the error wraps ctx.Err(): no exec process
// outlives the call. Probes and lifecycle hooks run through it.
func (r *Execer) ExecSync(ctx context.Context, id string, cmd []string) (int, []byte, error) {
	if len(cmd) == 0 {
		return 0, nil, fmt.Errorf("exec in %s: empty command", id)
	}
	nsctx := r.ctx(context.WithoutCancel(ctx))
	task, spec, err := r.execTarget(nsctx, id)
	if err != nil {
		return 0, nil, err
	}
	pspec := *spec
	pspec.Args = cmd
	pspec.Terminal = false
	var out limitedBuffer
	execID := newExecID()
	proc, err := task.Exec(nsctx, execID, &pspec, cio.NewCreator(cio.WithStreams(nil, &out, &out)))
	if err != nil {
		return 0, nil, fmt.Errorf("exec in %s: %w", id, err)
	}
	// The process is deleted on every path, on a context of its own:
	// the caller's may be over.
	defer func() {
		dctx, cancel := context.WithTimeout(nsctx, cleanupTimeout)
		defer cancel()
		if _, err := proc.Delete(dctx, containerd.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
			r.log.Warn("delete exec process", "container", id, "exec", execID, "err", err)
		}
	}()
	exited, err := proc.Wait(nsctx)
	if err != nil {
		return 0, nil, fmt.Errorf("exec in %s: %w", id, err)
	}
	if err := proc.Start(nsctx); err != nil {
		return 0, nil, fmt.Errorf("exec in %s: start: %w", id, err)
	}
	select {
	case st := <-exited:
		proc.IO().Wait()
		code, _, err := st.Result()
		if err != nil {
			return 0, out.Bytes(), fmt.Errorf("exec in %s: %w", id, err)
		}
		return int(code), out.Bytes(), nil
	case <-ctx.Done():
		if err := proc.Kill(nsctx, syscall.SIGKILL); err != nil && !errdefs.IsNotFound(err) {
			r.log.Warn("kill exec process", "container", id, "exec", execID, "err", err)
		}
		kctx, cancel := context.WithTimeout(nsctx, killTimeout)
		defer cancel()
		select {
		case <-exited:
		case <-kctx.Done():
		}
		proc.IO().Cancel()
		return 0, out.Bytes(), fmt.Errorf("exec in %s: %w", id, ctx.Err())
	}
}

// execTarget returns container id's task and its process spec, the base
// of an exec's.
func (r *Execer) execTarget(nsctx context.Context, id string) (containerd.Task, *specs.Process, error) {
	cont, err := r.client.LoadContainer(nsctx, id)
	if errdefs.IsNotFound(err) {
		return nil, nil, fmt.Errorf("exec in %s: %w", id, ErrNoContainer)
	} else if err != nil {
		return nil, nil, fmt.Errorf("exec in %s: %w", id, err)
	}
	spec, err := cont.Spec(nsctx)
	if err != nil {
		return nil, nil, fmt.Errorf("exec in %s: read spec: %w", id, err)
	}
	if spec.Process == nil {
		return nil, nil, fmt.Errorf("exec in %s: its spec has no process", id)
	}
	task, err := cont.Task(nsctx, nil)
	if errdefs.IsNotFound(err) {
		return nil, nil, fmt.Errorf("exec in %s: %w", id, ErrNoTask)
	} else if err != nil {
		return nil, nil, fmt.Errorf("exec in %s: %w", id, err)
	}
	return task, spec.Process, nil
}

func newExecID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "exec-" + hex.EncodeToString(b[:])
}

// limitedBuffer keeps the first execOutputMax bytes written to it and
// drops the rest; it is safe for the two writers (stdout, stderr).
type limitedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := execOutputMax - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *limitedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}
