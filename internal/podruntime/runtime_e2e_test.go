//go:build e2e

package podruntime

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	tasks "github.com/containerd/containerd/api/services/tasks/v1"
	containerd "github.com/containerd/containerd/v2/client"
	ctrimages "github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/errdefs"
	"github.com/containerd/errdefs/pkg/errgrpc"
	"golang.org/x/sys/unix"

	"tug/internal/images"
	"tug/internal/pod"
	"tug/internal/podlabels"
	"tug/internal/podlogs"
	"tug/internal/specopts"
	"tug/internal/testutil"
	"tug/internal/volume"
)

// loggerBin is the stand-in for "tug logger", built by TestMain.
var loggerBin string

func TestMain(m *testing.M) {
	os.Exit(testutil.RunWithBinary(m, "./testdata/logger", &loggerBin))
}

// env is one test's runtime in a fresh containerd namespace.
type env struct {
	r        *Runtime
	images   *images.Manager // the runtime's image manager, for imports
	imageDir string          // its image directory
	// connect connects a new Runtime (with its image manager and log
	// converter) as tug does at its start.
	connect func() (*Runtime, *images.Manager, *podlogs.Pumps)
	ctx     context.Context // in the test's containerd namespace
	image   string          // the test image, imported
	archive string
	counts  *countHandler
	// logs is the file log driver's converter of e.r, which the agent
	// runs as a component; stopLogs ends it.
	logs     *podlogs.Pumps
	stopLogs func()
}

// runLogs runs e.logs, asking e.r, until e.stopLogs.
func (e *env) runLogs() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	r, logs := e.r, e.logs
	go func() {
		defer close(done)
		_ = logs.Run(ctx, r.LogTasks())
	}()
	e.stopLogs = func() {
		cancel()
		<-done
	}
}

// newEnv connects a Runtime to the test containerd in a namespace of its
// own, with its own root, logs and image directories, imports the test
// image unless noImport, and removes everything at the end.
func newEnv(t *testing.T, noImport bool) *env {
	t.Helper()
	testutil.RequireRoot(t)
	addr := testutil.RequireContainerd(t)
	image, archive := testutil.TestImage(t)
	dir := t.TempDir()
	counts := &countHandler{Handler: testutil.Logger(t).Handler(), n: map[string]int{}, mu: &sync.Mutex{}}
	ns := testutil.Namespace(t)
	ctx := context.Background()
	log := slog.New(counts)
	root, imageDir := filepath.Join(dir, "root"), filepath.Join(dir, "images")
	connect := func() (*Runtime, *images.Manager, *podlogs.Pumps) {
		client, err := Dial(ctx, addr, ns, log)
		if err != nil {
			t.Fatal(err)
		}
		imgs := images.New(images.Config{Client: client, Namespace: ns, Snapshotter: DefaultSnapshotter, RootDir: root, ImageDir: imageDir, Log: log})
		logs := podlogs.NewPumps(podlogs.PumpsConfig{RootDir: root, MaxSize: DefaultLogMaxSize, MaxFiles: DefaultLogMaxFiles, Log: log})
		r, err := New(Config{
			Client: client,
			Images: imgs,
			Logs:   logs,
			Volumes: volume.New(volume.Config{RootDir: root, Log: log,
				Snapshots: client.SnapshotService(DefaultSnapshotter), Namespace: ns, Images: imgs}),
			Address:    addr,
			Namespace:  ns,
			RootDir:    root,
			LogsDir:    filepath.Join(dir, "logs"),
			LoggerPath: loggerBin,
			Log:        log,
		})
		if err != nil {
			t.Fatal(err)
		}
		return r, imgs, logs
	}
	r, imgs, logs := connect()
	e := &env{r: r, images: imgs, logs: logs, imageDir: imageDir, connect: connect, ctx: namespaces.WithNamespace(ctx, ns), image: image, archive: archive, counts: counts}
	e.runLogs()
	t.Cleanup(func() { e.cleanup(t) })
	if !noImport {
		if err := os.MkdirAll(imageDir, 0o755); err != nil {
			t.Fatal(err)
		}
		copyFile(t, archive, filepath.Join(imageDir, "busybox.tar"))
		if err := imgs.ImportArchives(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// cleanup removes the namespace's containers (with the Runtime's own
// deletion, which the leak check of testutil.Namespace then verifies) and
// images.
func (e *env) cleanup(t *testing.T) {
	ctx := e.ctx
	client := e.r.client
	conts, err := client.Containers(ctx)
	if err != nil {
		t.Errorf("cleanup: list containers: %v", err)
	}
	for _, c := range conts {
		if err := e.r.deleteContainer(ctx, c); err != nil {
			t.Errorf("cleanup: %s: %v", c.ID(), err)
		}
	}
	if err := testutil.RemoveImages(ctx, client); err != nil {
		t.Errorf("cleanup: %v", err)
	}
	// What a failed pull fetched is kept under a lease for the next one.
	if err := testutil.RemovePullLeases(ctx, client); err != nil {
		t.Errorf("cleanup: %v", err)
	}
	e.stopLogs()
	e.r.Close()
}

// countHandler counts log messages (to see how many pulls ran).
type countHandler struct {
	slog.Handler
	mu *sync.Mutex
	n  map[string]int
}

func (h *countHandler) Handle(ctx context.Context, r slog.Record) error {
	h.mu.Lock()
	h.n[r.Message]++
	h.mu.Unlock()
	return h.Handler.Handle(ctx, r)
}

func (h *countHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &countHandler{Handler: h.Handler.WithAttrs(as), mu: h.mu, n: h.n}
}

func (h *countHandler) WithGroup(g string) slog.Handler {
	return &countHandler{Handler: h.Handler.WithGroup(g), mu: h.mu, n: h.n}
}

func (h *countHandler) count(msg string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n[msg]
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// newPod returns a pod with one container running script in sh.
func (e *env) newPod(t *testing.T, script string) *pod.Pod {
	t.Helper()
	name := "web-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	if len(name) > 50 {
		name = name[:50]
	}
	p := &pod.Pod{
		APIVersion: "v1", Kind: "Pod",
		Metadata: pod.ObjectMeta{Name: name, Namespace: "default"},
		Spec: pod.PodSpec{
			RestartPolicy: pod.RestartNever,
			Containers: []pod.Container{{
				Name: "app", Image: e.image, ImagePullPolicy: pod.PullNever,
				Command: []string{"sh", "-c", script},
			}},
		},
	}
	p.Metadata.UID = pod.UID("e2e", "default", name+e.r.cfg.Namespace)
	if _, err := e.r.PreparePod(e.ctx, p, pod.Sandbox{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.r.CleanupPod(context.Background(), p); err != nil {
			t.Errorf("CleanupPod: %v", err)
		}
	})
	return p
}

// ensureImage makes c's image present as a container start does.
func (e *env) ensureImage(ctx context.Context, c *pod.Container) (containerd.Image, error) {
	return e.r.images.Ensure(ctx, nil, c)
}

func (e *env) start(t *testing.T, p *pod.Pod, attempt int, ns pod.Namespaces) string {
	t.Helper()
	id, err := e.r.StartContainer(e.ctx, p, &p.Spec.Containers[0], false, attempt, pod.Sandbox{Namespaces: ns}, pod.LinuxResources{})
	if err != nil {
		t.Fatalf("StartContainer: %v", err)
	}
	return id
}

// readRecords reads the CRI log file at path.
func readRecords(t *testing.T, path string) []podlogs.Record {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var recs []podlogs.Record
	for line := range bytes.Lines(b) {
		r, err := podlogs.ParseRecord(bytes.TrimSuffix(line, []byte{'\n'}))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		recs = append(recs, r)
	}
	return recs
}

// waitLog waits until the container's log holds a record with text.
func (e *env) waitLog(t *testing.T, p *pod.Pod, attempt int, stream, text string) []podlogs.Record {
	t.Helper()
	path := e.r.ContainerLogPath(p, p.Spec.Containers[0].Name, attempt)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			recs := readRecords(t, path)
			for _, r := range recs {
				if r.Stream == stream && string(r.Text) == text && !r.Partial {
					return recs
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %s record %q in %s: %+v", stream, text, path, recs)
			}
		} else if time.Now().After(deadline) {
			t.Fatalf("no log file: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (e *env) only(t *testing.T, p *pod.Pod) pod.RuntimeContainer {
	t.Helper()
	cs, err := e.r.PodContainers(e.ctx, p.Metadata.UID)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 {
		t.Fatalf("PodContainers = %+v, want one", cs)
	}
	return cs[0]
}

// activeSnapshots lists the namespace's active (container) snapshots.
func (e *env) activeSnapshots(t *testing.T) []string {
	t.Helper()
	var keys []string
	err := e.r.client.SnapshotService(e.r.cfg.Snapshotter).Walk(e.ctx, func(_ context.Context, info snapshots.Info) error {
		if info.Kind == snapshots.KindActive {
			keys = append(keys, info.Name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

func TestE2EStartLogStopRemove(t *testing.T) {
	e := newEnv(t, false)
	p := e.newPod(t, "echo hello; echo oops >&2; sleep 30")
	id := e.start(t, p, 0, pod.Namespaces{})
	if id != podlabels.ContainerID(p, "app", 0) {
		t.Errorf("id = %q, want %q", id, podlabels.ContainerID(p, "app", 0))
	}
	e.waitLog(t, p, 0, "stdout", "hello")
	e.waitLog(t, p, 0, "stderr", "oops")

	rc := e.only(t, p)
	img, err := e.r.client.GetImage(e.ctx, e.image)
	if err != nil {
		t.Fatal(err)
	}
	if rc.ID != id || rc.State != pod.RunRunning || rc.PID == 0 || rc.Name != "app" || rc.PodUID != p.Metadata.UID ||
		rc.PodName != p.Metadata.Name || rc.Namespace != "default" || rc.Init || rc.Attempt != 0 ||
		rc.SpecHash != pod.ContainerHash(p, &p.Spec.Containers[0]) || rc.Image != e.image ||
		rc.ImageID != img.Target().Digest.String() || rc.StartedAt.IsZero() || rc.CreatedAt.IsZero() {
		t.Errorf("PodContainers = %+v", rc)
	}
	if all, err := e.r.ListContainers(e.ctx); err != nil || len(all) != 1 || !reflect.DeepEqual(all[0], rc) {
		t.Errorf("ListContainers = %+v, %v; want [%+v]", all, err, rc)
	}

	// sh as PID 1 ignores SIGTERM: the grace period runs out, then SIGKILL.
	start := time.Now()
	if err := e.r.StopContainer(e.ctx, id, time.Second); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < time.Second || d > 10*time.Second {
		t.Errorf("stop took %v, want the 1 s grace then SIGKILL", d)
	}
	rc = e.only(t, p)
	if rc.State != pod.RunExited || rc.ExitCode != 137 || rc.FinishedAt.IsZero() {
		t.Errorf("after stop: %+v, want exited 137", rc)
	}
	if code, err := e.r.WaitContainer(e.ctx, id); err != nil || code != 137 {
		t.Errorf("WaitContainer after stop = %d, %v; want 137", code, err)
	}
	if err := e.r.StopContainer(e.ctx, id, time.Second); err != nil {
		t.Errorf("second stop: %v", err)
	}

	if err := e.r.RemoveContainer(e.ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := e.r.client.LoadContainer(e.ctx, id); !errdefs.IsNotFound(err) {
		t.Errorf("container still there: %v", err)
	}
	if snaps := e.activeSnapshots(t); len(snaps) != 0 {
		t.Errorf("snapshots left: %v", snaps)
	}
	if cs, _ := e.r.PodContainers(e.ctx, p.Metadata.UID); len(cs) != 0 {
		t.Errorf("PodContainers after remove = %+v", cs)
	}
	if err := e.r.RemoveContainer(e.ctx, id); err != nil {
		t.Errorf("second remove: %v", err)
	}
	if _, err := e.r.WaitContainer(e.ctx, id); !errors.Is(err, ErrContainerNotFound) {
		t.Errorf("WaitContainer on a removed container: %v", err)
	}
}

func TestE2EGracefulStop(t *testing.T) {
	e := newEnv(t, false)
	p := e.newPod(t, "trap 'echo bye; exit 0' TERM; echo ready; while true; do sleep 0.1; done")
	id := e.start(t, p, 0, pod.Namespaces{})
	e.waitLog(t, p, 0, "stdout", "ready")
	start := time.Now()
	if err := e.r.StopContainer(e.ctx, id, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("stop took %v; SIGTERM should end it at once", d)
	}
	if rc := e.only(t, p); rc.State != pod.RunExited || rc.ExitCode != 0 {
		t.Errorf("after stop: %+v, want exited 0", rc)
	}
	// The logger wrote what the container said while exiting.
	e.waitLog(t, p, 0, "stdout", "bye")
}

func TestE2EExitCode(t *testing.T) {
	e := newEnv(t, false)
	p := e.newPod(t, "echo -n partial; exit 3")
	id := e.start(t, p, 2, pod.Namespaces{})
	ctx, cancel := context.WithTimeout(e.ctx, 20*time.Second)
	defer cancel()
	code, err := e.r.WaitContainer(ctx, id)
	if err != nil || code != 3 {
		t.Fatalf("WaitContainer = %d, %v; want 3", code, err)
	}
	// The exited task was reaped: its shim is gone, the exit is in labels.
	if _, err := e.r.client.TaskService().Get(e.ctx, &tasks.GetRequest{ContainerID: id}); !errdefs.IsNotFound(errgrpc.ToNative(err)) {
		t.Errorf("task still there after WaitContainer: %v", err)
	}
	rc := e.only(t, p)
	if rc.State != pod.RunExited || rc.ExitCode != 3 || rc.FinishedAt.IsZero() || rc.Attempt != 2 || rc.PID != 0 {
		t.Errorf("PodContainers = %+v, want exited 3, attempt 2", rc)
	}
	// Waiting again returns at once.
	if code, err := e.r.WaitContainer(ctx, id); err != nil || code != 3 {
		t.Errorf("second WaitContainer = %d, %v", code, err)
	}
	e.waitLog(t, p, 2, "stdout", "partial") // written F when the stream closed, on reap
}

func TestE2EListReapsExited(t *testing.T) {
	e := newEnv(t, false)
	p := e.newPod(t, "echo -n last; exit 5")
	id := e.start(t, p, 0, pod.Namespaces{})
	// Nobody waits: the listing sees the exit and reaps the task, so the
	// shim ends and the logger writes the line that had no newline.
	deadline := time.Now().Add(10 * time.Second)
	for {
		rc := e.only(t, p)
		_, err := e.r.client.TaskService().Get(e.ctx, &tasks.GetRequest{ContainerID: id})
		if rc.State == pod.RunExited && errdefs.IsNotFound(errgrpc.ToNative(err)) {
			if rc.ExitCode != 5 || rc.FinishedAt.IsZero() {
				t.Errorf("after reap: %+v, want exited 5", rc)
			}
			break
		}
		if rc.State == pod.RunExited && rc.ExitCode != 5 {
			t.Fatalf("exited %d, want 5", rc.ExitCode)
		}
		if time.Now().After(deadline) {
			t.Fatalf("task not reaped: %+v, %v", rc, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	e.waitLog(t, p, 0, "stdout", "last")
}

// TestE2EOneReaperPerTask: an exited task asked for by every path at once
// (two waits, a stop, the listing, a removal) is reaped by its one reaper:
// every caller sees the exit code, the task is deleted once, and its shim
// ends (the leak check of testutil.Namespace fails on a shim left behind:
// two deletes of one task at once can strand it in containerd 1.6).
func TestE2EOneReaperPerTask(t *testing.T) {
	e := newEnv(t, false)
	for round := range 8 {
		p := e.newPod(t, "sleep 0.2; exit 4")
		id := e.start(t, p, round, pod.Namespaces{})
		var wg sync.WaitGroup
		codes := make([]int, 2)
		errs := make([]error, 4)
		for i := range codes {
			wg.Go(func() { codes[i], errs[i] = e.r.WaitContainer(e.ctx, id) })
		}
		wg.Go(func() { errs[2] = e.r.StopContainer(e.ctx, id, 5*time.Second) })
		wg.Go(func() { _, errs[3] = e.r.ListContainers(e.ctx) })
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("round %d: caller %d: %v", round, i, err)
			}
		}
		for i, code := range codes {
			if code != 4 {
				t.Errorf("round %d: wait %d = %d, want 4", round, i, code)
			}
		}
		if err := e.r.RemoveContainer(e.ctx, id); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
}

func TestE2EWaitCancelled(t *testing.T) {
	e := newEnv(t, false)
	p := e.newPod(t, "sleep 30")
	id := e.start(t, p, 0, pod.Namespaces{})
	ctx, cancel := context.WithTimeout(e.ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := e.r.WaitContainer(ctx, id); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitContainer = %v, want deadline exceeded", err)
	}
}

func TestE2ERestartKeepsRunningAndLogging(t *testing.T) {
	e := newEnv(t, false)
	p := e.newPod(t, "i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.1; done")
	e.start(t, p, 0, pod.Namespaces{})
	e.waitLog(t, p, 0, "stdout", "tick 1")
	// tug goes away; the container and what writes its output (the shim,
	// or the logger of the binary driver) do not.
	e.stopLogs()
	e.r.Close()
	time.Sleep(500 * time.Millisecond)
	e.r, e.images, e.logs = e.connect()
	e.runLogs()
	rc := e.only(t, p)
	if rc.State != pod.RunRunning {
		t.Errorf("after reconnect: %+v, want running (adopted)", rc)
	}
	e.waitLog(t, p, 0, "stdout", "tick 8")
}

func TestE2ELeftoverContainerReplaced(t *testing.T) {
	e := newEnv(t, false)
	p := e.newPod(t, "echo one; sleep 30")
	id1 := e.start(t, p, 0, pod.Namespaces{})
	p.Spec.Containers[0].Command = []string{"sh", "-c", "echo two; sleep 30"}
	id2 := e.start(t, p, 0, pod.Namespaces{}) // same attempt: same ID
	if id1 != id2 {
		t.Fatalf("IDs differ: %s %s", id1, id2)
	}
	rc := e.only(t, p)
	if rc.State != pod.RunRunning || rc.SpecHash != pod.ContainerHash(p, &p.Spec.Containers[0]) {
		t.Errorf("PodContainers = %+v", rc)
	}
	e.waitLog(t, p, 0, "stdout", "two")
}

func TestE2EFailedStartLeavesNothing(t *testing.T) {
	e := newEnv(t, false)
	p := e.newPod(t, "")
	p.Spec.Containers[0].Command = []string{"/no/such/binary"}
	_, err := e.r.StartContainer(e.ctx, p, &p.Spec.Containers[0], false, 0, pod.Sandbox{}, pod.LinuxResources{})
	if err == nil {
		t.Fatal("StartContainer of a missing binary succeeded")
	}
	if !strings.Contains(err.Error(), `start container "app"`) {
		t.Errorf("error %q does not name the container", err)
	}
	if cs, _ := e.r.ListContainers(e.ctx); len(cs) != 0 {
		t.Errorf("containers left: %+v", cs)
	}
	if snaps := e.activeSnapshots(t); len(snaps) != 0 {
		t.Errorf("snapshots left: %v", snaps)
	}

	priv := true
	p.Spec.Containers[0].SecurityContext = &pod.SecurityContext{Privileged: &priv}
	if _, err := e.r.StartContainer(e.ctx, p, &p.Spec.Containers[0], false, 0, pod.Sandbox{}, pod.LinuxResources{}); !errors.Is(err, specopts.ErrPrivilegedNotAllowed) {
		t.Errorf("privileged: %v, want ErrPrivilegedNotAllowed", err)
	}
}

func TestE2EPullPolicies(t *testing.T) {
	e := newEnv(t, true)
	ref := testutil.RegistryImage(t)
	ctx, cancel := context.WithTimeout(e.ctx, 2*time.Minute)
	defer cancel()

	// Never, missing.
	c := &pod.Container{Name: "app", Image: ref, ImagePullPolicy: pod.PullNever}
	if _, err := e.ensureImage(ctx, c); !errors.Is(err, images.ErrImageNotPresent) {
		t.Fatalf("Never with a missing image: %v, want ErrImageNotPresent", err)
	}
	p := e.newPod(t, "true")
	p.Spec.Containers[0].Image = "docker.io/library/nosuch:1"
	if _, err := e.r.StartContainer(ctx, p, &p.Spec.Containers[0], false, 0, pod.Sandbox{}, pod.LinuxResources{}); !errors.Is(err, images.ErrImageNotPresent) {
		t.Fatalf("StartContainer with Never and a missing image: %v", err)
	}

	// IfNotPresent pulls once, concurrent callers share the pull.
	c.ImagePullPolicy = pod.PullIfNotPresent
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = e.ensureImage(ctx, c)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if n := e.counts.count("pulling image"); n != 1 {
		t.Errorf("%d pulls for 4 concurrent IfNotPresent callers, want 1", n)
	}
	img, err := e.ensureImage(ctx, c) // present now: no pull
	if err != nil || e.counts.count("pulling image") != 1 {
		t.Fatalf("IfNotPresent with the image present pulled again (%v)", err)
	}
	if ok, _ := img.IsUnpacked(ctx, e.r.cfg.Snapshotter); !ok {
		t.Error("pulled image is not unpacked")
	}

	// Always pulls again.
	c.ImagePullPolicy = pod.PullAlways
	if _, err := e.ensureImage(ctx, c); err != nil || e.counts.count("pulling image") != 2 {
		t.Fatalf("Always: %v, %d pulls", err, e.counts.count("pulling image"))
	}

	// Always with the registry unreachable uses the local image.
	offline := "127.0.0.1:1/tug/busybox:1.35"
	if _, err := e.r.client.ImageService().Create(ctx, ctrimages.Image{Name: offline, Target: img.Target()}); err != nil {
		t.Fatal(err)
	}
	c.Image = offline
	if _, err := e.ensureImage(ctx, c); err != nil {
		t.Fatalf("Always offline with a local image: %v", err)
	}
	if e.counts.count("no registry host reachable, running the image present") != 1 {
		t.Error("no warning for the offline fallback")
	}
	c.Image = "127.0.0.1:1/tug/other:1"
	if _, err := e.ensureImage(ctx, c); err == nil || errors.Is(err, images.ErrImageNotPresent) {
		t.Errorf("Always offline without a local image: %v, want the pull error", err)
	}

	// A container runs from the pulled image.
	p = e.newPod(t, "echo pulled")
	p.Spec.Containers[0].Image = ref
	p.Spec.Containers[0].ImagePullPolicy = pod.PullIfNotPresent
	e.start(t, p, 0, pod.Namespaces{})
	e.waitLog(t, p, 0, "stdout", "pulled")
}

func TestE2EMounts(t *testing.T) {
	e := newEnv(t, false)
	hostDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(hostDir, "in.txt"), []byte("from host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := e.newPod(t, `cat /host/in.txt
echo written > /scratch/out.txt && echo scratch ok
echo sub > /sub/f && echo sub ok
touch /host/nope 2>/dev/null || echo host ro
touch /rofs 2>/dev/null || echo rootfs ro
echo "etc-hostname $(cat /etc/hostname)"
echo "HOSTNAME=$HOSTNAME"
echo "mem $(grep -c ' /mem tmpfs' /proc/mounts)"
echo "pwd $(pwd)"
echo "user-env $GREETING"
grep -q "10.244.0.7.*web" /etc/hosts && test -e /etc/resolv.conf && echo etc ok`)
	ro := true
	c := &p.Spec.Containers[0]
	c.Env = []pod.EnvVar{{Name: "GREETING", Value: "hi"}}
	c.WorkingDir = "/scratch"
	c.SecurityContext = &pod.SecurityContext{ReadOnlyRootFilesystem: &ro}
	p.Spec.Volumes = []pod.Volume{
		{Name: "host", HostPath: &pod.HostPathVolumeSource{Path: hostDir, Type: pod.HostPathDirectory}},
		{Name: "scratch", EmptyDir: &pod.EmptyDirVolumeSource{}},
		{Name: "mem", EmptyDir: &pod.EmptyDirVolumeSource{Medium: pod.StorageMediumMemory}},
	}
	c.VolumeMounts = []pod.VolumeMount{
		{Name: "host", MountPath: "/host", ReadOnly: true},
		{Name: "scratch", MountPath: "/scratch"},
		{Name: "scratch", MountPath: "/sub", SubPath: "a/b"},
		{Name: "mem", MountPath: "/mem"},
	}
	if _, err := e.r.PreparePod(e.ctx, p, pod.Sandbox{IP: "10.244.0.7"}); err != nil {
		t.Fatal(err)
	}
	id := e.start(t, p, 0, pod.Namespaces{})
	if code, err := e.r.WaitContainer(e.ctx, id); err != nil || code != 0 {
		t.Fatalf("WaitContainer = %d, %v", code, err)
	}
	for _, want := range []string{
		"from host", "scratch ok", "sub ok", "host ro", "rootfs ro",
		"etc-hostname " + p.Metadata.Name, "HOSTNAME=" + p.Metadata.Name, "mem 1",
		"pwd /scratch", "user-env hi", "etc ok",
	} {
		e.waitLog(t, p, 0, "stdout", want)
	}
	scratch := filepath.Join(e.r.cfg.RootDir, "pods", p.Metadata.UID, "volumes", "empty-dir", "scratch")
	if b, err := os.ReadFile(filepath.Join(scratch, "out.txt")); err != nil || string(b) != "written\n" {
		t.Errorf("emptyDir file on the host = %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(scratch, "a", "b", "f")); err != nil {
		t.Errorf("subPath file on the host: %v", err)
	}
	if _, err := os.Stat(filepath.Join(hostDir, "nope")); !os.IsNotExist(err) {
		t.Errorf("read-only hostPath was written: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

func TestE2EUserAndCapabilities(t *testing.T) {
	e := newEnv(t, false)
	p := e.newPod(t, `echo "uid $(id -u):$(id -g)"; grep CapBnd /proc/self/status`)
	p.Spec.Containers[0].SecurityContext = &pod.SecurityContext{
		RunAsUser: ptr(int64(1234)), RunAsGroup: ptr(int64(5678)),
		Capabilities: &pod.Capabilities{Drop: []string{"ALL"}, Add: []string{"NET_BIND_SERVICE"}},
	}
	id := e.start(t, p, 0, pod.Namespaces{})
	if code, err := e.r.WaitContainer(e.ctx, id); err != nil || code != 0 {
		t.Fatalf("WaitContainer = %d, %v", code, err)
	}
	e.waitLog(t, p, 0, "stdout", "uid 1234:5678")
	e.waitLog(t, p, 0, "stdout", "CapBnd:\t0000000000000400") // CAP_NET_BIND_SERVICE only
}

// pinNamespaces creates new UTS, IPC and network namespaces pinned under a
// private directory, with hostname set in the UTS one, as the network
// package does for a pod.
func pinNamespaces(t *testing.T, hostname string) pod.Namespaces {
	t.Helper()
	testutil.RequireCommand(t, "unshare")
	dir := t.TempDir()
	if err := unix.Mount(dir, dir, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	if err := unix.Mount("", dir, "", unix.MS_PRIVATE, ""); err != nil {
		t.Fatal(err)
	}
	ns := pod.Namespaces{Net: filepath.Join(dir, "net"), IPC: filepath.Join(dir, "ipc"), UTS: filepath.Join(dir, "uts")}
	for _, f := range []string{ns.Net, ns.IPC, ns.UTS} {
		if err := os.WriteFile(f, nil, 0o444); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Unmount(f, unix.MNT_DETACH) })
	}
	out, err := exec.Command("unshare", "--uts="+ns.UTS, "--ipc="+ns.IPC, "--net="+ns.Net, "hostname", hostname).CombinedOutput()
	if err != nil {
		t.Fatalf("unshare: %v: %s", err, out)
	}
	return ns
}

func TestE2ENamespaces(t *testing.T) {
	e := newEnv(t, false)
	hostHostname, _ := os.Hostname()
	t.Run("joined", func(t *testing.T) {
		p := e.newPod(t, `echo "hostname $(hostname)"; echo "netdevs $(ls /sys/class/net | wc -l)"; echo "etc-hostname $(cat /etc/hostname)"`)
		// The namespace's owner set its hostname; the container must not
		// change it (runc would, in a joined namespace, if the spec said so).
		ns := pinNamespaces(t, "pinned-name")
		id := e.start(t, p, 0, ns)
		if code, err := e.r.WaitContainer(e.ctx, id); err != nil || code != 0 {
			t.Fatalf("WaitContainer = %d, %v", code, err)
		}
		e.waitLog(t, p, 0, "stdout", "hostname pinned-name")
		e.waitLog(t, p, 0, "stdout", "netdevs 1") // lo only: the pod's own network namespace
		e.waitLog(t, p, 0, "stdout", "etc-hostname "+p.Hostname())
	})
	t.Run("hostNetwork", func(t *testing.T) {
		p := e.newPod(t, `echo "hostname $(hostname)"; echo "etc-hostname $(cat /etc/hostname)"; echo "HOSTNAME=$HOSTNAME"`)
		p.Spec.HostNetwork = true
		if _, err := e.r.PreparePod(e.ctx, p, pod.Sandbox{}); err != nil {
			t.Fatal(err)
		}
		id := e.start(t, p, 0, pod.Namespaces{})
		if code, err := e.r.WaitContainer(e.ctx, id); err != nil || code != 0 {
			t.Fatalf("WaitContainer = %d, %v", code, err)
		}
		for _, want := range []string{"hostname " + hostHostname, "etc-hostname " + hostHostname, "HOSTNAME=" + hostHostname} {
			e.waitLog(t, p, 0, "stdout", want)
		}
	})
}

func TestE2ETaskVanished(t *testing.T) {
	e := newEnv(t, false)
	p := e.newPod(t, "sleep 30")
	id := e.start(t, p, 0, pod.Namespaces{})
	// Delete the task while tug is down (as a reboot would): no reaper
	// sees its exit, no exit label is written.
	e.stopLogs()
	e.r.Close()
	e.r, e.images, e.logs = e.connect()
	e.runLogs()
	cont, err := e.r.client.LoadContainer(e.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	task, err := cont.Task(e.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := task.Delete(e.ctx, containerd.WithProcessKill); err != nil {
		t.Fatal(err)
	}
	if rc := e.only(t, p); rc.State != pod.RunExited || rc.ExitCode != unknownExitCode {
		t.Errorf("vanished task: %+v, want exited 255", rc)
	}
	if all, _ := e.r.ListContainers(e.ctx); len(all) != 1 || all[0].ExitCode != unknownExitCode || all[0].FinishedAt.IsZero() {
		t.Errorf("ListContainers = %+v", all)
	}
	if labels, _ := cont.Labels(e.ctx); labels[podlabels.LabelExitCode] != "255" {
		t.Errorf("the unknown exit was not recorded: %v", labels)
	}
	if code, err := e.r.WaitContainer(e.ctx, id); err != nil || code != unknownExitCode {
		t.Errorf("WaitContainer = %d, %v; want 255", code, err)
	}

	// A container that never had a task is created; Wait says so.
	noTask := "notask"
	if _, err := e.r.client.NewContainer(e.ctx, noTask, containerd.WithNewSpec(), containerd.WithContainerLabels(map[string]string{
		podlabels.LabelPodUID: p.Metadata.UID, podlabels.LabelContainer: "other", podlabels.LabelAttempt: "0",
	})); err != nil {
		t.Fatal(err)
	}
	cs, err := e.r.PodContainers(e.ctx, p.Metadata.UID)
	if err != nil || len(cs) != 2 || cs[1].ID != noTask || cs[1].State != pod.RunCreated {
		t.Errorf("PodContainers = %+v, %v", cs, err)
	}
	if _, err := e.r.WaitContainer(e.ctx, noTask); !errors.Is(err, ErrNoTask) {
		t.Errorf("WaitContainer without a task: %v, want ErrNoTask", err)
	}
	if err := e.r.StopContainer(e.ctx, noTask, time.Second); err != nil {
		t.Errorf("StopContainer without a task: %v", err)
	}
	if err := e.r.RemoveContainer(e.ctx, noTask); err != nil {
		t.Errorf("RemoveContainer without a task: %v", err)
	}
}

// dockerSave turns the test image's OCI archive into a docker-save archive
// tagged tag, gzip-compressed when gz.
func dockerSave(t *testing.T, ociArchive, tag string, gz bool) []byte {
	t.Helper()
	f, err := os.Open(ociArchive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	blobs := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			b, _ := io.ReadAll(tr)
			blobs[filepath.Clean(h.Name)] = b
		}
	}
	blob := func(d string) string { return "blobs/sha256/" + strings.TrimPrefix(d, "sha256:") }
	var index struct{ Manifests []struct{ Digest string } }
	if err := json.Unmarshal(blobs["index.json"], &index); err != nil || len(index.Manifests) == 0 {
		t.Fatalf("index.json: %v", err)
	}
	var mf struct {
		Config struct{ Digest string }
		Layers []struct{ Digest string }
	}
	if err := json.Unmarshal(blobs[blob(index.Manifests[0].Digest)], &mf); err != nil {
		t.Fatal(err)
	}
	entry := struct {
		Config   string
		RepoTags []string
		Layers   []string
	}{Config: blob(mf.Config.Digest), RepoTags: []string{tag}}
	files := map[string][]byte{entry.Config: blobs[entry.Config]}
	for _, l := range mf.Layers {
		entry.Layers = append(entry.Layers, blob(l.Digest))
		files[blob(l.Digest)] = blobs[blob(l.Digest)]
	}
	manifest, _ := json.Marshal([]any{entry})
	files["manifest.json"] = manifest

	var buf bytes.Buffer
	var w io.Writer = &buf
	var zw *gzip.Writer
	if gz {
		zw = gzip.NewWriter(&buf)
		w = zw
	}
	tw := tar.NewWriter(w)
	for name, b := range files {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg})
		tw.Write(b)
	}
	tw.Close()
	if zw != nil {
		zw.Close()
	}
	return buf.Bytes()
}

func TestE2EImportArchives(t *testing.T) {
	e := newEnv(t, true)
	dir := e.imageDir
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, e.archive, filepath.Join(dir, "busybox.tar"))
	if err := os.WriteFile(filepath.Join(dir, "app.docker.tar"), dockerSave(t, e.archive, "tugtest/app:v1", false), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("not an image"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := e.images.ImportArchives(e.ctx); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{e.image, "docker.io/tugtest/app:v1"} {
		img, err := e.r.images.Local(e.ctx, ref)
		if err != nil {
			t.Fatalf("%s after import: %v", ref, err)
		}
		if ok, _ := img.IsUnpacked(e.ctx, e.r.cfg.Snapshotter); !ok {
			t.Errorf("%s not unpacked", ref)
		}
	}
	// Imported archives are remembered: a second call imports nothing.
	before := e.counts.count("imported image")
	if err := e.images.ImportArchives(e.ctx); err != nil || e.counts.count("imported image") != before {
		t.Errorf("second ImportArchives imported again (%v)", err)
	}

	// WatchImages picks up an archive dropped later (gzip, docker-save).
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() { done <- e.images.Watch(ctx) }()
	tmp := filepath.Join(dir, ".late.partial")
	if err := os.WriteFile(tmp, dockerSave(t, e.archive, "tugtest/late:v2", true), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "late.tar.gz")); err != nil {
		t.Fatal(err)
	}
	// Imported means unpacked too: the image record alone appears before
	// the unpack ends.
	deadline := time.Now().Add(15 * time.Second)
	for {
		if img, err := e.r.images.Local(e.ctx, "docker.io/tugtest/late:v2"); err == nil {
			if ok, _ := img.IsUnpacked(e.ctx, e.r.cfg.Snapshotter); ok {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("WatchImages did not import late.tar.gz")
		}
		time.Sleep(200 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("WatchImages = %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("WatchImages did not return after cancel")
	}

	// A broken archive is an error, reported once.
	if err := os.WriteFile(filepath.Join(dir, "broken.tar"), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := e.images.ImportArchives(e.ctx); err == nil || !strings.Contains(err.Error(), "broken.tar") {
		t.Errorf("broken archive: %v", err)
	}
	if err := e.images.ImportArchives(e.ctx); err != nil {
		t.Errorf("broken archive retried without a change: %v", err)
	}
}

func TestE2EDialUnreachable(t *testing.T) {
	testutil.RequireRoot(t)
	dir := t.TempDir()
	_, _, err := dialOnce(context.Background(), filepath.Join(dir, "nope.sock"), "unreachable")
	if err == nil || !strings.Contains(err.Error(), "connect to containerd") {
		t.Errorf("dial with no daemon: %v", err)
	}
}
