package podruntime

import (
	"context"
	"fmt"
	"sync"
	"time"
	"tug/internal/podlabels"

	tasks "github.com/containerd/containerd/api/services/tasks/v1"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/errdefs"
	"github.com/containerd/errdefs/pkg/errgrpc"
)

// A reaper is the one goroutine that waits for a container's task to
// exit, records the exit in the container's labels and deletes the task
// (reap): the only place a task is deleted, as containerd's CRI has one
// exit monitor per task. The first that needs the exit starts it with
// exitOf, and every other waits on the same one: WaitContainer (an init
// container), StopContainer, RemoveContainer, and the listing when it finds
// a task that has exited. A running container nobody waits for has none:
// a reaper holds an open Wait call to containerd, about 0.1 MiB of tug's
// memory per container, and the listing finds the exit within its period. Two deletes of one task at once can strand
// its shim in containerd 1.6 (the one that ends first has the shim shut
// down and closes containerd's connection to it, the other fails with
// "ttrpc: closed" and never asks again), so there is no second one.
type reaper struct {
	done chan struct{} // closed once the task is reaped, or the reaper gave up
	code int           // the exit code, once done
	err  error         // why it gave up (containerd went away, tug stops)
}

// reapers are the reapers that run, by container ID.
type reapers struct {
	mu sync.Mutex
	m  map[string]*reaper
}

// exitOf returns the reaper of container id's task, starting it if none
// runs. A reaper that ended is forgotten: a later call starts another,
// which finds the task gone and reads the exit back from the labels.
func (r *Runtime) exitOf(id string) *reaper {
	r.reapers.mu.Lock()
	defer r.reapers.mu.Unlock()
	if rp := r.reapers.m[id]; rp != nil {
		return rp
	}
	if r.reapers.m == nil {
		r.reapers.m = map[string]*reaper{}
	}
	rp := &reaper{done: make(chan struct{})}
	r.reapers.m[id] = rp
	go func() {
		rp.code, rp.err = r.awaitExit(r.life, id)
		r.reapers.mu.Lock()
		delete(r.reapers.m, id)
		r.reapers.mu.Unlock()
		close(rp.done)
	}()
	return rp
}

// awaitExit waits until container id's task has exited (at once if it has)
// or ctx ends, then reaps it and returns its exit code. For a task that is
// already deleted the exit code recorded in the labels is returned; for
// one that vanished unseen (its shim died, the host rebooted), 255. A
// container that was never started is ErrNoTask; a missing one
// ErrContainerNotFound.
func (r *Runtime) awaitExit(ctx context.Context, id string) (int, error) {
	ctx = r.ctx(ctx)
	cont, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return 0, notFound(err)
	}
	task, err := cont.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
		return r.exitFromLabels(ctx, cont)
	} else if err != nil {
		return 0, err
	}
	ch, err := task.Wait(ctx)
	if err != nil {
		return 0, err
	}
	code, at, err := (<-ch).Result()
	switch {
	case errdefs.IsNotFound(err): // deleted meanwhile
		return r.exitFromLabels(ctx, cont)
	case ctx.Err() != nil:
		return 0, ctx.Err()
	case err != nil:
		return 0, err
	}
	if err := r.reap(ctx, id, code, at); err != nil {
		r.log.Warn("reap exited task", "container", id, "err", err)
		return 0, err
	}
	return int(code), nil
}

// reap records the exit of container id's stopped task in the container's
// labels, then deletes the task, which ends its shim (unless other tasks of
// its group still run in it). The shim keeps the container's output pipes
// open until then, so only now does the logger see their end, write a last
// line that had no newline, and exit (the delete waits for that). The
// labels are written first, so the exit status is never lost. It runs on a
// context of its own, bounded, so that tug stopping does not leave it half
// done (Close waits for it). A task already deleted is not an error. Only
// a reaper calls it.
func (r *Runtime) reap(ctx context.Context, id string, code uint32, at time.Time) error {
	r.reaps.add()
	defer r.reaps.done()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	rec := containers.Container{ID: id, Labels: podlabels.Exit(code, at)}
	_, err := r.client.ContainerService().Update(ctx, rec, "labels."+podlabels.LabelExitCode, "labels."+podlabels.LabelFinishedAt)
	r.records.changed()
	if err != nil {
		return fmt.Errorf("record exit status: %w", err)
	}
	if _, err = r.client.TaskService().Delete(ctx, &tasks.DeleteTaskRequest{ContainerID: id}); err != nil {
		if err = errgrpc.ToNative(err); !errdefs.IsNotFound(err) {
			return fmt.Errorf("delete task: %w", err)
		}
	}
	r.logTaskDeleted(id)
	r.log.Debug("reaped task", "container", id, "exit", code)
	return nil
}

// reaped waits until rp is done, d has passed (false) or ctx ends.
func reaped(ctx context.Context, rp *reaper, d time.Duration) (bool, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-rp.done:
		return true, nil
	case <-t.C:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// reapCount counts the reaps under way, so that Close can wait for them.
type reapCount struct {
	mu   sync.Mutex
	n    int
	zero *sync.Cond
}

func (c *reapCount) add() {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
}

func (c *reapCount) done() {
	c.mu.Lock()
	if c.n--; c.n == 0 && c.zero != nil {
		c.zero.Broadcast()
	}
	c.mu.Unlock()
}

// wait returns once no reap is under way.
func (c *reapCount) wait() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.zero == nil {
		c.zero = sync.NewCond(&c.mu)
	}
	for c.n > 0 {
		c.zero.Wait()
	}
}
