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

// reap records the exit of container id's stopped task in the container's
// labels, then deletes the task, which ends its shim (unless other tasks of
// its group still run in it). The shim keeps the container's output pipes
// open until then, so only now does the logger see their end, write a last
// line that had no newline, and exit (the delete waits for that). The
// labels are written first, so the exit status is never lost. It runs on a
// context of its own, bounded, so that a caller giving up does not leave it
// half done. A task already deleted is not an error.
//
// Every delete of a task (this one, and deleteContainer's) holds r.deletes
// for the container: two at once can strand its shim in containerd 1.6.
// Both go through containerd's one connection to the shim; the one that
// ends first asks the shim to shut down (which it refuses while it still
// holds the container) and closes that connection, so the other fails with
// "ttrpc: closed" and never asks again: the shim lives on, idle, with
// nothing to end it. CI's leak check caught this twice in
// TestRestartPolicies, each time an init container, whose exit is reaped by
// its wait and by the listing.
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
	unlock := r.deletes.Lock(id)
	_, err = r.client.TaskService().Delete(ctx, &tasks.DeleteTaskRequest{ContainerID: id})
	unlock()
	if err != nil {
		if err = errgrpc.ToNative(err); !errdefs.IsNotFound(err) {
			return fmt.Errorf("delete task: %w", err)
		}
	}
	r.logTaskDeleted(id)
	r.log.Debug("reaped task", "container", id, "exit", code)
	return nil
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
