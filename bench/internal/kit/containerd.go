package kit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	tasksapi "github.com/containerd/containerd/api/services/tasks/v1"
	tasktypes "github.com/containerd/containerd/api/types/task"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/defaults"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/errdefs"
)

// Connect connects to the containerd at sock.
func Connect(sock string) (*containerd.Client, error) {
	client, err := containerd.New(sock, containerd.WithTimeout(10*time.Second))
	if err != nil {
		return nil, fmt.Errorf("connect to containerd at %s: %w", sock, err)
	}
	return client, nil
}

// ImportImage imports the archive into namespace ns, unpacks it and checks
// that it holds image.
func ImportImage(ctx context.Context, client *containerd.Client, ns, archive, image string) error {
	ctx = namespaces.WithNamespace(ctx, ns)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	f, err := os.Open(archive)
	if err != nil {
		return fmt.Errorf("import image: %w", err)
	}
	defer f.Close()
	imgs, err := client.Import(ctx, f)
	if err != nil {
		return fmt.Errorf("import %s into namespace %s: %w", archive, ns, err)
	}
	for _, img := range imgs {
		if err := containerd.NewImage(client, img).Unpack(ctx, defaults.DefaultSnapshotter); err != nil {
			return fmt.Errorf("unpack %s in namespace %s: %w", img.Name, ns, err)
		}
	}
	if _, err := client.GetImage(ctx, image); err != nil {
		return fmt.Errorf("archive %s does not hold image %s: %w", archive, image, err)
	}
	return nil
}

// Purge kills and deletes the containers of namespace ns that match selects
// (all of them when match is nil), with their snapshots, in parallel.
func Purge(ctx context.Context, client *containerd.Client, ns string, match func(id string) bool) error {
	ctx = namespaces.WithNamespace(ctx, ns)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	ctrs, err := client.Containers(ctx)
	if err != nil {
		return fmt.Errorf("list containers in namespace %s: %w", ns, err)
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, c := range ctrs {
		if match != nil && !match(c.ID()) {
			continue
		}
		wg.Go(func() {
			if err := deleteContainer(ctx, c); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// deleteContainer kills the container's task, if any, and deletes both.
func deleteContainer(ctx context.Context, c containerd.Container) error {
	task, err := c.Task(ctx, nil)
	switch {
	case errdefs.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("task of %s: %w", c.ID(), err)
	default:
		exited, err := task.Wait(ctx)
		if err != nil {
			return fmt.Errorf("wait for task %s: %w", c.ID(), err)
		}
		if err := task.Kill(ctx, syscall.SIGKILL); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("kill task %s: %w", c.ID(), err)
		}
		select {
		case <-exited:
		case <-ctx.Done():
			return fmt.Errorf("wait for task %s to exit: %w", c.ID(), ctx.Err())
		}
		if _, err := task.Delete(ctx); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("delete task %s: %w", c.ID(), err)
		}
	}
	if err := c.Delete(ctx, containerd.WithSnapshotCleanup); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("delete container %s: %w", c.ID(), err)
	}
	return nil
}

// RemoveNamespace deletes the images of namespace ns (their content and
// snapshots go by garbage collection) and its leases, then the namespace,
// retrying while the garbage collector still holds it.
func RemoveNamespace(ctx context.Context, client *containerd.Client, ns string) error {
	ctx = namespaces.WithNamespace(ctx, ns)
	imgs, err := client.ImageService().List(ctx)
	if err != nil {
		return fmt.Errorf("list images in namespace %s: %w", ns, err)
	}
	for i, img := range imgs {
		var opts []images.DeleteOpt
		if i == len(imgs)-1 {
			opts = append(opts, images.SynchronousDelete())
		}
		if err := client.ImageService().Delete(ctx, img.Name, opts...); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("delete image %s in namespace %s: %w", img.Name, ns, err)
		}
	}
	ls, err := client.LeasesService().List(ctx)
	if err != nil {
		return fmt.Errorf("list leases in namespace %s: %w", ns, err)
	}
	for _, l := range ls {
		if err := client.LeasesService().Delete(ctx, l); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("delete lease %s in namespace %s: %w", l.ID, ns, err)
		}
	}
	for i := 0; ; i++ {
		err := client.NamespaceService().Delete(ctx, ns)
		if err == nil || errdefs.IsNotFound(err) {
			return nil
		}
		if i == 50 {
			return fmt.Errorf("delete namespace %s: %w", ns, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// CheckRunning fails unless exactly want tasks of namespace ns whose
// container ID match selects are RUNNING.
func CheckRunning(ctx context.Context, client *containerd.Client, ns string, want int, match func(id string) bool) error {
	resp, err := client.TaskService().List(namespaces.WithNamespace(ctx, ns), &tasksapi.ListTasksRequest{})
	if err != nil {
		return fmt.Errorf("list tasks in namespace %s: %w", ns, err)
	}
	got := 0
	for _, t := range resp.Tasks {
		if match(t.ID) && t.Status == tasktypes.Status_RUNNING {
			got++
		}
	}
	if got != want {
		return fmt.Errorf("cross-check: %d of %d tasks RUNNING in namespace %s", got, want, ns)
	}
	return nil
}

// TaskPIDs returns the pid of every task in namespace ns by container ID;
// a container without a running task is an error.
func TaskPIDs(ctx context.Context, client *containerd.Client, ns string) (map[string]int, error) {
	ctx = namespaces.WithNamespace(ctx, ns)
	ctrs, err := client.Containers(ctx)
	if err != nil {
		return nil, fmt.Errorf("list containers in namespace %s: %w", ns, err)
	}
	out := map[string]int{}
	for _, c := range ctrs {
		task, err := c.Task(ctx, nil)
		if err != nil {
			return nil, fmt.Errorf("task of %s: %w", c.ID(), err)
		}
		st, err := task.Status(ctx)
		if err != nil {
			return nil, fmt.Errorf("task of %s: %w", c.ID(), err)
		}
		if st.Status != containerd.Running {
			return nil, fmt.Errorf("task of %s is %s", c.ID(), st.Status)
		}
		out[c.ID()] = int(task.Pid())
	}
	return out, nil
}

// WaitGone waits until namespace ns has no container that match selects
// (none at all when match is nil).
func WaitGone(ctx context.Context, client *containerd.Client, ns string, timeout time.Duration, match func(id string) bool) error {
	ctx = namespaces.WithNamespace(ctx, ns)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		ctrs, err := client.Containers(ctx)
		if err != nil {
			return fmt.Errorf("list containers in namespace %s: %w", ns, err)
		}
		left := 0
		for _, c := range ctrs {
			if match == nil || match(c.ID()) {
				left++
			}
		}
		if left == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d containers still in namespace %s: %w", left, ns, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
