//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"tug/internal/podlabels"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/errdefs"
)

// queryTimeout bounds one look at containerd.
const queryTimeout = 10 * time.Second

// ctr is what containerd says about one container and its task.
type ctr struct {
	ID          string
	Labels      map[string]string
	CreatedAt   time.Time
	Snapshotter string
	SnapshotKey string
	// Status is the task's status, "" when the container has no task.
	Status   containerd.ProcessStatus
	PID      uint32
	ExitCode uint32    // when Status is Stopped
	ExitedAt time.Time // when Status is Stopped
}

func (c ctr) UID() string  { return c.Labels[podlabels.LabelPodUID] }
func (c ctr) Name() string { return c.Labels[podlabels.LabelContainer] }
func (c ctr) Attempt() int {
	n, err := strconv.Atoi(c.Labels[podlabels.LabelAttempt])
	if err != nil {
		return -1
	}
	return n
}

// exit returns the container's exit code and time: from its stopped task,
// or from the labels tug records when it deletes an exited task.
func (c ctr) exit() (code int, at time.Time, ok bool) {
	if c.Status == containerd.Stopped {
		return int(c.ExitCode), c.ExitedAt, true
	}
	if c.Status != "" {
		return 0, time.Time{}, false
	}
	s, found := c.Labels[podlabels.LabelExitCode]
	if !found {
		return 0, time.Time{}, false
	}
	code, err := strconv.Atoi(s)
	if err != nil {
		return 0, time.Time{}, false
	}
	at, err = time.Parse(time.RFC3339Nano, c.Labels[podlabels.LabelFinishedAt])
	if err != nil {
		return 0, time.Time{}, false
	}
	return code, at, true
}

func (c ctr) String() string {
	return fmt.Sprintf("%s (pod %s, container %q, attempt %d, task %q, pid %d)",
		c.ID, c.UID(), c.Name(), c.Attempt(), c.Status, c.PID)
}

// containers lists every container in the test's namespace with its task,
// ordered by creation.
func (tg *tug) containers() ([]ctr, error) {
	ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
	defer cancel()
	list, err := tg.client.Containers(ctx)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	var out []ctr
	for _, c := range list {
		info, err := c.Info(ctx, containerd.WithoutRefreshedMetadata)
		if isNotFound(err) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("container %s: %w", c.ID(), err)
		}
		r := ctr{
			ID:          c.ID(),
			Labels:      info.Labels,
			CreatedAt:   info.CreatedAt,
			Snapshotter: info.Snapshotter,
			SnapshotKey: info.SnapshotKey,
		}
		task, err := c.Task(ctx, nil)
		switch {
		case isNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("task of %s: %w", c.ID(), err)
		default:
			st, err := task.Status(ctx)
			if isNotFound(err) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("task status of %s: %w", c.ID(), err)
			}
			r.Status, r.PID, r.ExitCode, r.ExitedAt = st.Status, task.Pid(), st.ExitStatus, st.ExitTime
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b ctr) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

// podContainers lists the containers labelled with pod UID uid.
func (tg *tug) podContainers(uid string) ([]ctr, error) {
	all, err := tg.containers()
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(all, func(c ctr) bool { return c.UID() != uid }), nil
}

// container returns the latest attempt of the named container of pod uid.
func (tg *tug) container(uid, name string) (ctr, bool, error) {
	cs, err := tg.podContainers(uid)
	if err != nil {
		return ctr{}, false, err
	}
	var last ctr
	found := false
	for _, c := range cs {
		if c.Name() == name && (!found || c.Attempt() >= last.Attempt()) {
			last, found = c, true
		}
	}
	return last, found, nil
}

// waitRunning waits until attempt attempt of the named container of the pod
// (manifest name podName, from the manifest directory) has a running task,
// and returns it.
func (tg *tug) waitRunning(timeout time.Duration, podName, name string, attempt int) ctr {
	tg.t.Helper()
	return tg.waitRunningUID(timeout, tg.uid(podName), name, attempt)
}

// waitRunningUID waits until attempt attempt of the named container of pod
// uid has a running task, and returns it.
func (tg *tug) waitRunningUID(timeout time.Duration, uid, name string, attempt int) ctr {
	tg.t.Helper()
	var got ctr
	tg.waitFor(timeout, fmt.Sprintf("container %q (attempt %d) of pod %s to run", name, attempt, uid), func() (bool, error) {
		c, ok, err := tg.container(uid, name)
		if err != nil || !ok {
			return false, err
		}
		if c.Attempt() > attempt {
			return false, fmt.Errorf("%w: already at %v", errStop, c)
		}
		got = c
		if c.Attempt() != attempt || c.Status != containerd.Running {
			return false, fmt.Errorf("latest is %v", c)
		}
		return true, nil
	})
	return got
}

// describe lists the containers of the namespace for a failure message.
func (tg *tug) describe() string {
	cs, err := tg.containers()
	if err != nil {
		return err.Error()
	}
	if len(cs) == 0 {
		return "no containers"
	}
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "\n  %v", c)
	}
	return b.String()
}

func isNotFound(err error) bool { return err != nil && errdefs.IsNotFound(err) }
