package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/containerd"
	tasksapi "github.com/containerd/containerd/api/services/tasks/v1"
	tasktypes "github.com/containerd/containerd/api/types/task"
	"github.com/containerd/containerd/errdefs"
	"github.com/containerd/containerd/images"
	"github.com/containerd/containerd/namespaces"
)

// env is what every measurement needs: the containerd client, the event
// recorder, the running tug and the work directory.
type env struct {
	o          options
	client     *containerd.Client
	rec        *recorder
	stopEvents context.CancelFunc
	dir        string
	tug        *tugProc
}

// setup connects to containerd, prepares both namespaces (image imported,
// leftovers of an earlier run removed), subscribes to the events and starts
// tug. On failure it undoes what it did.
func setup(ctx context.Context, o options) (e *env, err error) {
	client, err := containerd.New(o.containerd, containerd.WithTimeout(10*time.Second))
	if err != nil {
		return nil, fmt.Errorf("connect to containerd at %s: %w", o.containerd, err)
	}
	dir, err := os.MkdirTemp("", "tug-bench-")
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("work directory: %w", err)
	}
	e = &env{o: o, client: client, dir: dir, stopEvents: func() {}}
	defer func() {
		if err != nil {
			err = errors.Join(err, e.teardown())
		}
	}()
	fmt.Fprintf(os.Stderr, "benchstart: work directory %s\n", dir)
	for _, ns := range []string{nsTug, nsCtr} {
		if err := purge(ctx, client, ns, nil); err != nil {
			return e, fmt.Errorf("remove leftovers in namespace %s: %w", ns, err)
		}
		if err := importImage(ctx, client, ns, o.archive, o.image); err != nil {
			return e, err
		}
	}
	evctx, cancel := context.WithCancel(context.Background())
	e.stopEvents = cancel
	e.rec = subscribe(evctx, client)

	bin := o.tug
	if bin == "" {
		if bin, err = buildTug(ctx, dir); err != nil {
			return e, err
		}
	}
	e.tug, err = startTug(ctx, bin, o.containerd, dir)
	return e, err
}

// teardown stops tug and removes everything the benchmark made: containers,
// images and namespaces in containerd, tug's namespace pins and the work
// directory. It uses its own context: it also runs after an interrupt.
func (e *env) teardown() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var errs []error
	if e.tug != nil {
		errs = append(errs, e.tug.stop())
	}
	e.stopEvents()
	for _, ns := range []string{nsTug, nsCtr} {
		if err := purge(ctx, e.client, ns, nil); err != nil {
			errs = append(errs, fmt.Errorf("remove containers in namespace %s: %w", ns, err))
			continue
		}
		errs = append(errs, removeNamespace(ctx, e.client, ns))
	}
	errs = append(errs, e.client.Close())
	if e.tug != nil {
		errs = append(errs, unmountPins(filepath.Join(e.tug.runDir, "ns")))
	}
	switch {
	case e.o.keep:
		fmt.Fprintf(os.Stderr, "benchstart: kept %s\n", e.dir)
	default:
		errs = append(errs, removeWorkDir(e.dir))
	}
	return errors.Join(errs...)
}

// importImage imports the archive into namespace ns, unpacks it and checks
// that it holds image.
func importImage(ctx context.Context, client *containerd.Client, ns, archive, image string) error {
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
		if err := containerd.NewImage(client, img).Unpack(ctx, containerd.DefaultSnapshotter); err != nil {
			return fmt.Errorf("unpack %s in namespace %s: %w", img.Name, ns, err)
		}
	}
	if _, err := client.GetImage(ctx, image); err != nil {
		return fmt.Errorf("archive %s does not hold image %s: %w", archive, image, err)
	}
	return nil
}

// purge kills and deletes the containers of namespace ns that keep selects
// (all of them when keep is nil), with their snapshots, in parallel.
func purge(ctx context.Context, client *containerd.Client, ns string, keep func(id string) bool) error {
	ctx = namespaces.WithNamespace(ctx, ns)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	ctrs, err := client.Containers(ctx)
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, c := range ctrs {
		if keep != nil && !keep(c.ID()) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := deleteContainer(ctx, c); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
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

// removeNamespace deletes the images of namespace ns (and so, by garbage
// collection, their content and snapshots), then the namespace.
func removeNamespace(ctx context.Context, client *containerd.Client, ns string) error {
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
	if err := client.NamespaceService().Delete(ctx, ns); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("delete namespace %s: %w", ns, err)
	}
	return nil
}

// running returns how many of the tasks in namespace ns whose container ID
// match selects are RUNNING.
func running(ctx context.Context, client *containerd.Client, ns string, match func(id string) bool) (int, error) {
	ctx = namespaces.WithNamespace(ctx, ns)
	resp, err := client.TaskService().List(ctx, &tasksapi.ListTasksRequest{})
	if err != nil {
		return 0, fmt.Errorf("list tasks in namespace %s: %w", ns, err)
	}
	n := 0
	for _, t := range resp.Tasks {
		if match(t.ID) && t.Status == tasktypes.Status_RUNNING {
			n++
		}
	}
	return n, nil
}

// checkRunning fails unless exactly want tasks selected by match run.
func checkRunning(ctx context.Context, client *containerd.Client, ns string, want int, match func(id string) bool) error {
	got, err := running(ctx, client, ns, match)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("cross-check: %d of %d tasks RUNNING in namespace %s", got, want, ns)
	}
	return nil
}

// waitGone waits until namespace ns has no container that match selects.
func waitGone(ctx context.Context, client *containerd.Client, ns string, timeout time.Duration, match func(id string) bool) error {
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
			if match(c.ID()) {
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

// removeWorkDir removes the work directory unless something is still
// mounted below it (then it says what and leaves it).
func removeWorkDir(dir string) error {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return fmt.Errorf("read mountinfo: %w", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			return fmt.Errorf("not removing %s: %s is still mounted", dir, f[4])
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove work directory: %w", err)
	}
	return nil
}
