package podruntime

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	tasks "github.com/containerd/containerd/api/services/tasks/v1"
	tasktypes "github.com/containerd/containerd/api/types/task"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/errdefs"
	"github.com/containerd/errdefs/pkg/errgrpc"

	"tug/internal/pod"
	"tug/internal/podlabels"
)

// ListContainers returns all of tug's containers in the namespace (those
// with tug's pod UID label), oldest first. It lists the tasks with one
// call, and the container records with another when they may have changed
// (see recordCache). A task found exited gets its reaper (see reaper),
// which reaps it in the background (its exit recorded in labels, the task
// deleted), as containerd's CRI does on a task's exit event, so that its
// shim ends and its log is complete. The returned slice is the caller's.
func (r *Runtime) ListContainers(ctx context.Context) ([]pod.RuntimeContainer, error) {
	ctx = r.ctx(ctx)
	resp, err := r.client.TaskService().List(ctx, &tasks.ListTasksRequest{})
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	procs := make(map[string]*tasktypes.Process, len(resp.Tasks))
	ids := make([]string, 0, len(resp.Tasks))
	for _, t := range resp.Tasks {
		procs[t.ID] = t
		ids = append(ids, t.ID)
	}
	recs, err := r.records.get(ctx, r.cfg.Clock.Now(), ids, func(ctx context.Context) ([]containers.Container, error) {
		return r.client.ContainerService().List(ctx, `labels."`+podlabels.LabelPodUID+`"`)
	})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	if len(recs) == 0 {
		return nil, nil
	}
	return r.toRuntimeContainers(ctx, recs, func(id string) *tasktypes.Process { return procs[id] }), nil
}

// PodContainers returns the containers of the pod with this UID (all
// attempts, init and app), found by label, oldest first (by creation time,
// then attempt). A container without a task, or whose task vanished, is
// reported from its labels; one deleted while being inspected is left out.
// Exited tasks are reaped as by ListContainers. The returned slice is the
// caller's.
func (r *Runtime) PodContainers(ctx context.Context, uid string) ([]pod.RuntimeContainer, error) {
	ctx = r.ctx(ctx)
	recs, err := r.client.ContainerService().List(ctx, `labels."`+podlabels.LabelPodUID+`"==`+strconv.Quote(uid))
	if err != nil {
		return nil, fmt.Errorf("list containers of pod %s: %w", uid, err)
	}
	return r.toRuntimeContainers(ctx, recs, func(id string) *tasktypes.Process {
		return r.getTask(ctx, id)
	}), nil
}

// getTask returns the task of container id, or nil when there is none (or
// it cannot be read now).
func (r *Runtime) getTask(ctx context.Context, id string) *tasktypes.Process {
	resp, err := r.client.TaskService().Get(ctx, &tasks.GetRequest{ContainerID: id})
	if err != nil {
		if !errdefs.IsNotFound(errgrpc.ToNative(err)) {
			r.log.Debug("get task", "container", id, "err", err)
			return &tasktypes.Process{ID: id, Status: tasktypes.Status_UNKNOWN}
		}
		return nil
	}
	return resp.Process
}

func (r *Runtime) toRuntimeContainers(ctx context.Context, recs []containers.Container, task func(id string) *tasktypes.Process) []pod.RuntimeContainer {
	out := make([]pod.RuntimeContainer, 0, len(recs))
	for _, rec := range recs {
		p := task(rec.ID)
		rc, ok := runtimeContainer(rec, p)
		if !ok {
			continue
		}
		if p != nil && p.Status == tasktypes.Status_STOPPED {
			r.exitOf(rec.ID) // reaped in the background: a listing never waits for a shim
		}
		if _, hasExit := rec.Labels[podlabels.LabelExitCode]; p == nil && !hasExit && !rc.StartedAt.IsZero() {
			// The task looks gone unseen: make sure (a task list skips a
			// task whose shim did not answer) and that the container is
			// still there, then record the unknown exit once.
			// The task first, then the record: a reap writes the exit
			// labels before it deletes the task, so a record read after
			// the task is seen gone holds the exit if a reap recorded it
			// since the list.
			p := r.getTask(ctx, rec.ID)
			cur, err := r.client.ContainerService().Get(ctx, rec.ID)
			switch _, recorded := cur.Labels[podlabels.LabelExitCode]; {
			case errdefs.IsNotFound(err):
				continue
			case p != nil:
				rc, _ = runtimeContainer(rec, p)
			case err == nil && recorded:
				rc, _ = runtimeContainer(cur, nil)
			default:
				rc.FinishedAt = r.recordVanished(ctx, rec.ID)
			}
		}
		if rc.State == pod.RunExited {
			rc.Message = r.terminationMessage(&rc)
		}
		out = append(out, rc)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].Attempt < out[j].Attempt
	})
	return out
}

// runtimeContainer turns a container record and its task (nil if none) into
// a RuntimeContainer. It reports false for a container without tug's labels.
// Without a task, a container whose exit tug recorded is exited with that
// code; one that was started but whose task vanished is exited with 255; one
// never started is created.
func runtimeContainer(rec containers.Container, p *tasktypes.Process) (pod.RuntimeContainer, bool) {
	rc := pod.RuntimeContainer{ID: rec.ID, Image: rec.Image, CreatedAt: rec.CreatedAt}
	if !podlabels.Record(rec.Labels, &rc) {
		return rc, false
	}
	switch {
	case p != nil:
		switch p.Status {
		case tasktypes.Status_CREATED:
			rc.State = pod.RunCreated
			rc.PID = p.Pid
		case tasktypes.Status_RUNNING, tasktypes.Status_PAUSED, tasktypes.Status_PAUSING:
			rc.State = pod.RunRunning
			rc.PID = p.Pid
		case tasktypes.Status_STOPPED:
			rc.State = pod.RunExited
			rc.ExitCode = int(p.ExitStatus)
			if p.ExitedAt != nil {
				rc.FinishedAt = p.ExitedAt.AsTime()
			}
		default:
			rc.State = pod.RunUnknown
		}
	default:
		if code, at, ok := podlabels.ReadExit(rec.Labels); ok {
			rc.State, rc.ExitCode, rc.FinishedAt = pod.RunExited, code, at
		} else if !rc.StartedAt.IsZero() {
			rc.State, rc.ExitCode = pod.RunExited, unknownExitCode
		} else {
			rc.State = pod.RunCreated
		}
	}
	return rc, true
}

// recordVanished records exit code 255 and the current time in the labels
// of a started container whose task is gone without tug having seen its exit
// (its shim died, or the host rebooted), so that later listings need not
// check again. It returns the time recorded.
func (r *Runtime) recordVanished(ctx context.Context, id string) time.Time {
	now := r.cfg.Clock.Now()
	rec := containers.Container{ID: id, Labels: podlabels.Exit(unknownExitCode, now)}
	_, err := r.client.ContainerService().Update(ctx, rec, "labels."+podlabels.LabelExitCode, "labels."+podlabels.LabelFinishedAt)
	r.records.changed()
	if err != nil {
		if !errdefs.IsNotFound(err) {
			r.log.Warn("record exit of vanished task", "container", id, "err", err)
		}
		return now
	}
	r.log.Warn("task vanished without its exit being seen; exit code 255 recorded", "container", id)
	return now
}

// ContainerSpec is the OCI runtime spec (JSON) of one of tug's containers
// and the identity of its pod, with, for the container of a CronJob's
// run, its CronJob's template UID and its slot (podlabels.CronJobRun;
// "" and zero for any other pod's).
type ContainerSpec struct {
	PodUID       string
	PodSource    string
	PodNamespace string
	Spec         []byte
	CronJobUID   string
	CronJobSlot  time.Time
}

// ContainerSpecs returns the OCI specs of all of tug's containers, in any
// state, oldest first: what the pods were given (host ID blocks, device
// nodes) and the CronJob runs they are, as containerd holds it whatever
// tug's own files say.
func (r *Runtime) ContainerSpecs(ctx context.Context) ([]ContainerSpec, error) {
	recs, err := r.client.ContainerService().List(r.ctx(ctx), `labels."`+podlabels.LabelPodUID+`"`)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	slices.SortStableFunc(recs, func(a, b containers.Container) int { return a.CreatedAt.Compare(b.CreatedAt) })
	out := make([]ContainerSpec, 0, len(recs))
	for _, rec := range recs {
		if uid := rec.Labels[podlabels.LabelPodUID]; uid != "" && rec.Spec != nil {
			cs := ContainerSpec{PodUID: uid, PodSource: rec.Labels[podlabels.LabelPodSource],
				PodNamespace: rec.Labels[podlabels.LabelPodNamespace], Spec: rec.Spec.GetValue()}
			cs.CronJobUID, cs.CronJobSlot, _ = podlabels.CronJobRun(rec.Labels)
			out = append(out, cs)
		}
	}
	return out, nil
}
