package reconcile

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"tug/internal/pod"
)

// work is what a worker is asked to do next: sync a pod, or kill it.
type work struct {
	pod  *pod.Pod
	kill bool
}

// podOps are what the loop does to a pod: a worker syncs or kills it,
// housekeeping removes what is left of a gone pod's sandbox. They are
// injected so that the worker's scheduling can be tested without a runtime. wait is
// cancelled when newer work arrives, so a sync blocked on a long wait (an
// init container) gives way; ctx ends only when tug stops.
type podOps struct {
	sync func(ctx, wait context.Context, p *pod.Pod) (syncResult, error)
	kill func(ctx context.Context, p *pod.Pod) error
	// removeSandbox removes what a pod that is gone left of its sandbox
	// (housekeeping calls it for UIDs without a worker).
	removeSandbox func(ctx context.Context, uid string) error
	// observe, when set, is told how long each sync or kill took, with the
	// kubelet's operation type: create (the worker's first sync), sync or
	// kill.
	observe func(operation string, d time.Duration)
}

// worker owns one pod UID. It holds at most one pending piece of work: a
// newer update replaces an undelivered one, but a kill is never overwritten,
// and once a kill is delivered the worker accepts nothing more and ends
// after the kill succeeds.
type worker struct {
	uid   string
	ops   podOps
	log   *slog.Logger
	retry backoff

	wake chan struct{} // capacity 1: "pending changed"

	mu        sync.Mutex
	pending   *work
	current   *pod.Pod           // the pod of the last accepted update
	killing   bool               // a kill was accepted
	interrupt context.CancelFunc // cancels the running sync's wait
	timer     *time.Timer        // a scheduled retry
}

func newWorker(uid string, ops podOps, log *slog.Logger, retry backoff) *worker {
	return &worker{uid: uid, ops: ops, log: log, retry: retry, wake: make(chan struct{}, 1)}
}

// update asks the worker to sync p. It reports false when the worker is
// being killed, in which case the caller must start a new worker later.
func (w *worker) update(p *pod.Pod) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.killing {
		return false
	}
	w.current = p
	w.deliverLocked(&work{pod: p}, true)
	return true
}

// kill asks the worker to stop and remove its pod, then end.
func (w *worker) kill(p *pod.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.killing {
		return
	}
	w.killing = true
	w.deliverLocked(&work{pod: p, kill: true}, true)
}

// resync syncs the current pod again unless other work is pending. It does
// not interrupt a sync that is waiting.
func (w *worker) resync() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.killing || w.pending != nil || w.current == nil {
		return
	}
	w.deliverLocked(&work{pod: w.current}, false)
}

func (w *worker) deliverLocked(wk *work, interrupt bool) {
	w.pending = wk
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	if interrupt && w.interrupt != nil {
		w.interrupt()
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// run processes work until the pod is killed or ctx ends. Stopping tug
// (ctx) leaves the pod running.
func (w *worker) run(ctx context.Context) {
	failing, first := false, true
	for {
		select {
		case <-ctx.Done():
			w.stopTimer()
			return
		case <-w.wake:
		}
		w.mu.Lock()
		wk := w.pending
		w.pending = nil
		wait, cancel := context.WithCancel(ctx)
		w.interrupt = cancel
		w.mu.Unlock()
		if wk == nil {
			cancel()
			continue
		}
		var (
			err error
			res syncResult
		)
		began, op := time.Now(), "sync"
		if wk.kill {
			op = "kill"
			err = w.ops.kill(ctx, wk.pod)
		} else {
			if first {
				op = "create"
			}
			first = false
			res, err = w.ops.sync(ctx, wait, wk.pod)
		}
		if w.ops.observe != nil {
			w.ops.observe(op, time.Since(began))
		}
		cancel()
		switch {
		case err == nil && wk.kill:
			w.log.Info("pod removed")
			return
		case err == nil:
			if failing {
				w.log.Info("pod sync recovered")
			}
			failing = false
			w.retry.reset()
			if res.requeue > 0 {
				w.scheduleAfter(wk, res.requeue)
			}
		case ctx.Err() != nil:
			return
		default:
			if !failing {
				w.log.Warn("pod sync failed, will retry", "err", err)
			} else {
				w.log.Debug("pod sync failed again", "err", err)
			}
			failing = true
			w.scheduleAfter(wk, w.retry.next())
		}
	}
}

// scheduleAfter redelivers wk after d, unless newer work arrives first.
func (w *worker) scheduleAfter(wk *work, d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pending != nil {
		return
	}
	if w.timer != nil {
		w.timer.Stop()
	}
	w.timer = time.AfterFunc(d, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.pending == nil && (wk.kill || !w.killing) {
			w.deliverLocked(wk, false)
		}
	})
}

func (w *worker) stopTimer() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
	}
}

// backoff doubles a delay from min up to max.
type backoff struct {
	min, max, cur time.Duration
}

func (b *backoff) next() time.Duration {
	if b.cur == 0 {
		b.cur = b.min
	} else if b.cur *= 2; b.cur > b.max {
		b.cur = b.max
	}
	return b.cur
}

func (b *backoff) reset() { b.cur = 0 }
