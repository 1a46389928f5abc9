package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"tug/internal/pod"
	"tug/internal/prober"
)

// Handlers runs containers' lifecycle handlers (postStart, preStop) with
// the probes' actions: exec through Exec in the container, httpGet and
// tcpSocket from inside the pod's network namespace, and sleep. Its zero
// value runs every action but exec. It is the sync loop's PoststartHook and
// PrestopHook.
type Handlers struct {
	// Exec runs cmd in container id (podruntime.Runtime.ExecSync).
	Exec func(ctx context.Context, id string, cmd []string) (int, []byte, error)
}

// hookTimeout bounds an exec or HTTP action when ctx has no deadline
// (a postStart hook: the kubelet gives it none; the pod's worker waits).
const hookTimeout = 24 * time.Hour

// Name names the hook in logs.
func (Handlers) Name() string { return "lifecycle" }

// Poststart runs c's postStart handler, if it has one, in container id.
func (hk Handlers) Poststart(ctx context.Context, p *pod.Pod, c *pod.Container, id string, sb pod.Sandbox) error {
	if c.Lifecycle == nil || c.Lifecycle.PostStart == nil {
		return nil
	}
	return hk.Run(ctx, p, c, id, sb, c.Lifecycle.PostStart)
}

// Prestop runs c's preStop handler, if it has one, in container id until
// ctx ends (the stop's grace period); sb is asked for the pod's sandbox
// only by a network action (httpGet, tcpSocket). ran says c has one.
func (hk Handlers) Prestop(ctx context.Context, p *pod.Pod, c *pod.Container, id string, sb func() pod.Sandbox) (ran bool, err error) {
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil {
		return false, nil
	}
	h := c.Lifecycle.PreStop
	var at pod.Sandbox
	if h.HTTPGet != nil || h.TCPSocket != nil {
		at = sb()
	}
	return true, hk.Run(ctx, p, c, id, at, h)
}

// Run runs hook h of container c (its ID id) of pod p, whose sandbox is
// sb, until it is done or ctx ends. It returns nil on success, an error
// wrapping ErrHookFailed when the action failed, another error when it
// could not be run. A sleep action returns nil when ctx ends first (the
// grace period ran out: the stop goes on, as for the kubelet). A
// tcpSocket action (accepted by the API, ignored by the kubelet) opens and
// closes a connection.
func (hk Handlers) Run(ctx context.Context, p *pod.Pod, c *pod.Container, id string, sb pod.Sandbox, h *pod.LifecycleHandler) error {
	if h == nil {
		return nil
	}
	if h.Sleep != nil {
		t := time.NewTimer(time.Duration(h.Sleep.Seconds) * time.Second)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		return nil
	}
	target := prober.Target{NetNS: sb.Net, PodIP: sb.IP, Ports: c.Ports}
	if hk.Exec != nil {
		target.Exec = containerExec{id: id, exec: hk.Exec}
	}
	timeout := hookTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	handler := h.Handler()
	res, msg, err := prober.Run(ctx, handler, target, timeout)
	switch {
	case err != nil:
		return fmt.Errorf("%s hook: %w", handler.Kind(), err)
	case res != prober.Success:
		if msg == "" {
			msg = res.String()
		}
		return &HookError{Action: handler.Kind(), Message: msg}
	}
	return nil
}

// HookError is a hook's action that ran and failed; it is ErrHookFailed
// for errors.Is, and its text is the action and why ("exec hook: ...").
type HookError struct {
	Action  string // exec, httpGet, tcpSocket
	Message string // the command's output, the HTTP status, the dial error
}

func (e *HookError) Error() string { return e.Action + " hook: " + e.Message }

// Is makes a HookError match ErrHookFailed.
func (e *HookError) Is(target error) bool { return target == ErrHookFailed }

// ErrHookFailed means a lifecycle hook ran and failed (an exec that
// exited non-zero, an HTTP status outside [200, 400), a refused
// connection); the error's text says how.
var ErrHookFailed = errors.New("lifecycle: hook failed")

// containerExec is a prober.Execer for one container.
type containerExec struct {
	id   string
	exec func(ctx context.Context, id string, cmd []string) (int, []byte, error)
}

func (e containerExec) Exec(ctx context.Context, cmd []string) (int, []byte, error) {
	return e.exec(ctx, e.id, cmd)
}
