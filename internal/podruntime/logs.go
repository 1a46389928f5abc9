package podruntime

import (
	"context"
	"fmt"
	"syscall"

	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/errdefs"

	"tug/internal/pod"
	"tug/internal/podlabels"
	"tug/internal/podlogs"
)

// A container's output reaches its CRI log (podlogs owns the layout) in one
// of two ways, Config.LogDriver: the "file" driver (the default) makes the
// shim write the raw output to files that podlogs.Pumps converts; the
// "binary" driver makes the shim start "<LoggerPath> logger <settings>"
// per container (podlogs.RunLogger). The "journald" and "file+journald"
// drivers are the file driver's raw files too, whose pumps send each line
// to Config.Journal, and with "journald" alone write no CRI log.

// LogDriverFile, LogDriverBinary, LogDriverJournald and
// LogDriverFileJournald are the values of Config.LogDriver.
const (
	LogDriverFile         = "file"
	LogDriverBinary       = "binary"
	LogDriverJournald     = "journald"
	LogDriverFileJournald = "file+journald"
)

// podLogDir is the log directory of pod p.
func (r *Runtime) podLogDir(p *pod.Pod) string { return podlogs.PodDir(r.cfg.LogsDir, p) }

// ContainerLogPath returns the log file of one attempt of a container:
// LogsDir/<namespace>_<pod>_<uid>/<container>/<attempt>.log.
func (r *Runtime) ContainerLogPath(p *pod.Pod, container string, attempt int) string {
	return podlogs.ContainerPath(r.cfg.LogsDir, p, container, attempt)
}

// logIO returns the task IO of a new attempt of container id of pod uid
// whose CRI log is path: the file driver's raw files, or the logger
// process of the binary driver.
func (r *Runtime) logIO(id, path, uid, container string, attempt int) (cio.Creator, error) {
	if r.pumps == nil {
		return cio.BinaryIO(r.cfg.LoggerPath, map[string]string{
			"logger": podlogs.Settings(path, r.cfg.LogMaxSize, r.cfg.LogMaxFiles)}), nil
	}
	stdout, stderr, err := r.pumps.Create(id, path, r.pumps.RawBase(uid, container, attempt))
	if err != nil {
		return nil, err
	}
	return func(string) (cio.IO, error) {
		return &fileIO{cfg: cio.Config{Stdout: stdout, Stderr: stderr}}, nil
	}, nil
}

// limitShim limits the shim of a task just created, when the file driver
// bounds raw output that way (podlogs.LimitShim).
func (r *Runtime) limitShim(pid uint32) error {
	if r.pumps == nil || !r.pumps.LimitsShims() {
		return nil
	}
	return podlogs.LimitShim(pid)
}

// containerEvent records a Warning event about container id, for the pod
// its labels name.
func (r *Runtime) containerEvent(ctx context.Context, id, reason, message string) {
	cont, err := r.client.LoadContainer(r.ctx(ctx), id)
	if err != nil {
		return
	}
	labels, err := cont.Labels(r.ctx(ctx))
	if err != nil {
		return
	}
	p := &pod.Pod{Metadata: pod.ObjectMeta{Name: labels[podlabels.LabelPodName], Namespace: labels[podlabels.LabelPodNamespace], UID: labels[podlabels.LabelPodUID]}}
	r.event(p, labels[podlabels.LabelContainer], "Warning", reason, message)
}

// killTask kills container id's task with SIGKILL.
func (r *Runtime) killTask(ctx context.Context, id string) error {
	ctx = r.ctx(ctx)
	cont, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return fmt.Errorf("kill container %s: %w", id, notFound(err))
	}
	task, err := cont.Task(ctx, nil)
	if err != nil {
		return fmt.Errorf("kill container %s: %w", id, notFound(err))
	}
	if err := task.Kill(ctx, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill container %s: %w", id, notFound(err))
	}
	return nil
}

// fileIO is the task IO of the file driver: paths only, nothing to copy.
type fileIO struct{ cfg cio.Config }

func (f *fileIO) Config() cio.Config { return f.cfg }
func (f *fileIO) Cancel()            {}
func (f *fileIO) Wait()              {}
func (f *fileIO) Close() error       { return nil }

// taskGone reports whether container id has no task (or no container).
func (r *Runtime) taskGone(ctx context.Context, id string) (bool, error) {
	cont, err := r.client.LoadContainer(ctx, id)
	if errdefs.IsNotFound(err) {
		return true, nil
	} else if err != nil {
		return false, err
	}
	if _, err := cont.Task(ctx, nil); errdefs.IsNotFound(err) {
		return true, nil
	} else if err != nil {
		return false, err
	}
	return false, nil
}

// logTaskDeleted tells the file driver's pump of container id that the
// shim has written everything.
func (r *Runtime) logTaskDeleted(id string) {
	if r.pumps != nil {
		r.pumps.TaskDeleted(id)
	}
}

// LogTasks is what the raw files' converter asks of the runtime
// (podlogs.Pumps.Run): whether a task is gone, the stop of a task whose
// output cannot be bounded, a Warning event, and the container of an
// attempt whose state file a power cut damaged.
func (r *Runtime) LogTasks() podlogs.Tasks {
	return podlogs.Tasks{TaskGone: r.taskGone, StopTask: r.killTask, Notify: r.containerEvent, Identify: r.identifyAttempt}
}
