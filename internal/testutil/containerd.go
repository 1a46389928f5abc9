package testutil

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	tasks "github.com/containerd/containerd/api/services/tasks/v1"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/core/leases"
	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/errdefs"
)

// leakTimeout bounds the leak check of a test's containerd namespace: the
// listing, the removal of what was left and the deletion of the namespace.
const leakTimeout = time.Minute

// shimExit bounds how long a shim may outlive its deleted task.
const shimExit = 5 * time.Second

// snapshotterType is the plugin type of containerd's snapshotters.
const snapshotterType = "io.containerd.snapshotter.v1"

// checkNamespace is Namespace's cleanup: it runs after the test's own
// cleanups (registered later, run earlier). Whatever is still in namespace
// ns then is a leak: it is removed, and the test fails with the list. Then
// the namespace itself is deleted.
func checkNamespace(t testing.TB, addr, ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), leakTimeout)
	defer cancel()
	client, err := containerd.New(addr, containerd.WithTimeout(probeTimeout))
	if err != nil {
		t.Errorf("leak check of containerd namespace %s: connect: %v", ns, err)
		return
	}
	defer client.Close()
	ctx = namespaces.WithNamespace(ctx, ns)
	left, err := Leftovers(ctx, client)
	if err != nil {
		t.Errorf("leak check of containerd namespace %s: %v", ns, err)
	}
	// A shim outlives its task for a moment after the task's deletion.
	var shims []string
	for deadline := time.Now().Add(shimExit); ; time.Sleep(100 * time.Millisecond) {
		if shims = shimsOf(addr, ns); len(shims) == 0 || time.Now().After(deadline) {
			break
		}
	}
	left = append(left, shims...)
	if len(left) > 0 {
		t.Errorf("containerd namespace %s: the test left %d objects after its own clean-up (removed now):\n\t%s",
			ns, len(left), strings.Join(left, "\n\t"))
		killShims(addr, ns)
		if err := removeAll(ctx, client); err != nil {
			t.Errorf("leak check: removing what was left in %s: %v", ns, err)
		}
		if again, err := Leftovers(ctx, client); err == nil && len(again) > 0 {
			t.Errorf("leak check: could not remove from %s:\n\t%s", ns, strings.Join(again, "\n\t"))
		}
	}
	// The garbage collector may still hold a reference for a moment.
	var nsErr error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if nsErr = ignoreNotFound(client.NamespaceService().Delete(ctx, ns)); nsErr == nil {
			return
		}
	}
	t.Errorf("leak check: delete containerd namespace %s: %v", ns, nsErr)
}

// Leftovers lists what is in the containerd namespace of ctx: tasks,
// containers, images, leases, snapshots of every snapshotter, content blobs
// and ingests, one "kind name" line each (empty: the namespace is empty).
func Leftovers(ctx context.Context, client *containerd.Client) ([]string, error) {
	var left []string
	var errs []error
	add := func(kind, name string) { left = append(left, kind+" "+name) }
	keep := func(what string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
	}

	ts, err := client.TaskService().List(ctx, &tasks.ListTasksRequest{})
	keep("list tasks", err)
	if ts != nil {
		for _, p := range ts.Tasks {
			add("task", p.ID+" ("+p.Status.String()+")")
		}
	}
	ctrs, err := client.ContainerService().List(ctx)
	keep("list containers", err)
	for _, c := range ctrs {
		add("container", c.ID)
	}
	imgs, err := client.ImageService().List(ctx)
	keep("list images", err)
	for _, img := range imgs {
		add("image", img.Name)
	}
	ls, err := client.LeasesService().List(ctx)
	keep("list leases", err)
	for _, l := range ls {
		add("lease", l.ID)
	}
	sns, err := snapshotters(ctx, client)
	keep("list snapshotters", err)
	for _, name := range sns {
		keep("walk snapshots of "+name, client.SnapshotService(name).Walk(ctx, func(_ context.Context, info snapshots.Info) error {
			add("snapshot", name+"/"+info.Name)
			return nil
		}))
	}
	cs := client.ContentStore()
	keep("walk content", cs.Walk(ctx, func(info content.Info) error {
		add("blob", info.Digest.String())
		return nil
	}))
	sts, err := cs.ListStatuses(ctx)
	keep("list ingests", err)
	for _, st := range sts {
		add("ingest", st.Ref)
	}
	return left, errors.Join(errs...)
}

// snapshotters returns the names of the snapshotters containerd loaded.
func snapshotters(ctx context.Context, client *containerd.Client) ([]string, error) {
	resp, err := client.IntrospectionService().Plugins(ctx, `type=="`+snapshotterType+`"`)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, p := range resp.Plugins {
		if p.InitErr == nil {
			names = append(names, p.ID)
		}
	}
	return names, nil
}

// RemoveContainers kills the task of every container in the containerd
// namespace of ctx and deletes the container with its snapshot: what tug
// leaves running by design when it stops (its pods), for a test's own
// clean-up.
func RemoveContainers(ctx context.Context, client *containerd.Client) error {
	ctrs, err := client.Containers(ctx)
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	var errs []error
	for _, c := range ctrs {
		if task, err := c.Task(ctx, nil); err == nil {
			if _, err := task.Delete(ctx, containerd.WithProcessKill); ignoreNotFound(err) != nil {
				errs = append(errs, fmt.Errorf("delete task %s: %w", c.ID(), err))
			}
		}
		if err := ignoreNotFound(c.Delete(ctx, containerd.WithSnapshotCleanup)); err != nil {
			errs = append(errs, fmt.Errorf("delete container %s: %w", c.ID(), err))
		}
	}
	return errors.Join(errs...)
}

// RemoveImages deletes every image in the containerd namespace of ctx, the
// last one synchronously, so that when it returns the garbage collector has
// removed their content and snapshots (unless something still holds them):
// an image cache is what a test's own clean-up removes.
func RemoveImages(ctx context.Context, client *containerd.Client) error {
	is := client.ImageService()
	imgs, err := is.List(ctx)
	if err != nil {
		return fmt.Errorf("list images: %w", err)
	}
	var errs []error
	for i, img := range imgs {
		var opts []images.DeleteOpt
		if i == len(imgs)-1 {
			opts = append(opts, images.SynchronousDelete())
		}
		if err := ignoreNotFound(is.Delete(ctx, img.Name, opts...)); err != nil {
			errs = append(errs, fmt.Errorf("delete image %s: %w", img.Name, err))
		}
	}
	return errors.Join(errs...)
}

// RemovePullLeases removes the leases tug keeps for a failed pull to resume
// from (IDs "tug-pull-..."), waiting for containerd's garbage collection of
// what they held: tug leaves them on purpose, a test's clean-up removes
// them.
func RemovePullLeases(ctx context.Context, client *containerd.Client) error {
	ls := client.LeasesService()
	all, err := ls.List(ctx)
	if err != nil {
		return fmt.Errorf("list leases: %w", err)
	}
	var errs []error
	for _, l := range all {
		if !strings.HasPrefix(l.ID, "tug-pull-") {
			continue
		}
		if err := ignoreNotFound(ls.Delete(ctx, l, leases.SynchronousDelete)); err != nil {
			errs = append(errs, fmt.Errorf("delete lease %s: %w", l.ID, err))
		}
	}
	return errors.Join(errs...)
}

// removeAll removes everything Leftovers lists: tasks and containers,
// images, leases, snapshots (children before parents), ingests and blobs.
func removeAll(ctx context.Context, client *containerd.Client) error {
	var errs []error
	keep := func(what string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
	}
	keep("containers", RemoveContainers(ctx, client))
	// Tasks without a container (a half-deleted container).
	if ts, err := client.TaskService().List(ctx, &tasks.ListTasksRequest{}); err == nil {
		for _, p := range ts.Tasks {
			_, err := client.TaskService().Delete(ctx, &tasks.DeleteTaskRequest{ContainerID: p.ID})
			keep("delete task "+p.ID, ignoreNotFound(err))
		}
	}
	keep("images", RemoveImages(ctx, client))
	ls := client.LeasesService()
	lss, err := ls.List(ctx)
	keep("list leases", err)
	for _, l := range lss {
		keep("delete lease "+l.ID, ignoreNotFound(ls.Delete(ctx, l, leases.SynchronousDelete)))
	}
	sns, err := snapshotters(ctx, client)
	keep("list snapshotters", err)
	for _, name := range sns {
		keep("remove snapshots of "+name, removeSnapshots(ctx, client.SnapshotService(name)))
	}
	cs := client.ContentStore()
	if sts, err := cs.ListStatuses(ctx); err == nil {
		for _, st := range sts {
			keep("abort ingest "+st.Ref, ignoreNotFound(cs.Abort(ctx, st.Ref)))
		}
	}
	keep("walk content", cs.Walk(ctx, func(info content.Info) error {
		keep("delete blob "+info.Digest.String(), ignoreNotFound(cs.Delete(ctx, info.Digest)))
		return nil
	}))
	return errors.Join(errs...)
}

// removeSnapshots removes every snapshot of a snapshotter, children before
// their parents.
func removeSnapshots(ctx context.Context, sn snapshots.Snapshotter) error {
	for round := 0; ; round++ {
		var infos []snapshots.Info
		if err := sn.Walk(ctx, func(_ context.Context, info snapshots.Info) error {
			infos = append(infos, info)
			return nil
		}); err != nil {
			return err
		}
		if len(infos) == 0 {
			return nil
		}
		if round == 20 {
			return fmt.Errorf("%d snapshots left", len(infos))
		}
		parents := map[string]bool{}
		for _, info := range infos {
			parents[info.Parent] = true
		}
		for _, info := range infos {
			if !parents[info.Name] {
				_ = sn.Remove(ctx, info.Name) // errors show as a leftover
			}
		}
	}
}

func ignoreNotFound(err error) error {
	if errdefs.IsNotFound(err) {
		return nil
	}
	return err
}

// shimsOf lists the containerd shims (processes running
// containerd-shim*) started for namespace ns by the containerd at addr, as
// "shim PID ID" lines. Every task of the namespace has one while it exists;
// one without a task is a leaked process.
func shimsOf(addr, ns string) []string {
	var out []string
	for pid, args := range shimProcs() {
		if flagValue(args, "-namespace") == ns && flagValue(args, "-address") == addr {
			out = append(out, fmt.Sprintf("shim %d %s", pid, flagValue(args, "-id")))
		}
	}
	return out
}

// shimProcs returns the command lines of the processes that run a
// containerd shim, by pid.
func shimProcs() map[int][]string {
	procs := map[int][]string{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil || !strings.HasPrefix(filepath.Base(exe), "containerd-shim") {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		procs[pid] = strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	}
	return procs
}

// flagValue returns the argument after flag in args, or "".
func flagValue(args []string, flag string) string {
	if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

// killShims kills the shims of namespace ns (see shimsOf) and the
// processes they started (the containers' init processes).
func killShims(addr, ns string) {
	for pid, args := range shimProcs() {
		if flagValue(args, "-namespace") != ns || flagValue(args, "-address") != addr {
			continue
		}
		for _, child := range childrenOf(pid) {
			_ = syscall.Kill(child, syscall.SIGKILL)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// childrenOf returns the pids whose parent is pid.
func childrenOf(pid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so cut after the last ')'.
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

// containerdAddr is the address Namespace's leak check connects to.
func containerdAddr() string { return os.Getenv(EnvContainerd) }
