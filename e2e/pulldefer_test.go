//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"

	"tug/internal/api"
	"tug/internal/events"
	"tug/internal/pod"
	"tug/internal/podview"
	"tug/internal/testutil"
)

// A pull never fills the disk: on a device whose containerd root is a
// small filesystem, an update to an image that does not fit above the
// imagefs eviction threshold waits (ImagePullDeferred) while the old
// container runs; nothing is evicted.

// TestPullDeferredWhenItDoesNotFit: a containerd of the test's own whose
// root is a 200 MiB ext4 filesystem (a loop device), tug's root a 64 MiB
// tmpfs. A pod runs from the test image; its manifest changes to an image
// with a 128 MiB layer (256 MiB with its unpacked copy, more than the room
// above imagefs.available<15%). For a minute: the old container runs on
// (same ID, same PID), the pod is not evicted and no Evicted event is
// recorded, the filesystem never goes past the threshold, the update's
// condition says ImagePullDeferred with the figures, and one
// ImagePullDeferred event says so while the pull is tried again. The
// manifest set back, the update is over with no restart.
func TestPullDeferredWhenItDoesNotFit(t *testing.T) {
	t.Parallel()
	const (
		fsSize    = 200 << 20
		layerSize = 128 << 20
		hold      = time.Minute
	)
	testutil.RequireRoot(t)
	ctrRoot := smallFS(t, fsSize)
	addr := startContainerd(t, ctrRoot)
	watch := watchAvailable(t, ctrRoot)

	reg := startRegistry(t, registryOpts{})
	big, _ := pushRandomImage(t, reg, "tug/toobig:v1", layerSize)
	tg := startTug(t, tugOpts{containerd: addr, args: rolloutArgs, beforeStart: func(tg *tug) {
		mountTmpfs(t, tg.rootDir, 64<<20)
		tg.relay(reg.Addr)
	}})
	noRollback := map[string]string{pod.AnnotationRolloutTimeout: "0"}
	const script = "while :; do sleep 1; done"
	good := rolloutPod("small", tg.image, script, noRollback, "")
	tg.writeManifest("small.yaml", good)
	c := tg.waitRunning(startTimeout, "small", "main", 0)
	tg.waitMainReady("small", "the first spec runs")

	tg.writeManifest("small.yaml", rolloutPod("small", big, script, noRollback, ""))
	uid := tg.uid("small")
	v := tg.waitPod(startTimeout, "small", "the update deferred: ImagePullDeferred with the figures", func(v *podview.View) error {
		u := conditionOf(v, pod.ConditionUpdateReady)
		if u.Status != "False" || u.Reason != pod.ReasonImagePullDeferred || !strings.Contains(u.Message, "needs ") ||
			!strings.Contains(u.Message, " MB free above the threshold") {
			return fmt.Errorf("%s condition %+v", pod.ConditionUpdateReady, u)
		}
		return nil
	})
	t.Logf("deferred: %s", conditionOf(&v, pod.ConditionUpdateReady).Message)

	deadline := time.Now().Add(hold)
	for time.Now().Before(deadline) {
		now, ok, err := tg.container(uid, "main")
		if err != nil || !ok || now.ID != c.ID || now.PID != c.PID || now.Status != containerd.Running {
			t.Fatalf("container main %v (found %v, %v), want %s (pid %d) running on", now, ok, err, c.ID, c.PID)
		}
		v, err := tg.podView("small")
		if err != nil {
			t.Fatal(err)
		}
		if v.Status.Reason == "Evicted" || v.Status.Phase == pod.PhaseFailed {
			t.Fatalf("pod %s/%s %q: want it running", v.Status.Phase, v.Status.Reason, v.Status.Message)
		}
		time.Sleep(2 * time.Second)
	}
	evs, err := tg.api().Events(context.Background(), api.EventQuery{UID: uid})
	if err != nil {
		t.Fatal(err)
	}
	var deferred, pulling []string
	for _, e := range evs {
		switch {
		case e.Reason == "Evicted" || strings.Contains(e.Message, "evict"):
			t.Errorf("event %s: %s; want no eviction", e.Reason, e.Message)
		case e.Reason == pod.ReasonImagePullDeferred:
			deferred = append(deferred, e.Message)
		case e.Reason == "Pulling" && strings.Contains(e.Message, big):
			pulling = append(pulling, e.Message)
		}
	}
	if len(pulling) < 2 {
		t.Errorf("%d pulls of %s in %v (%q): want it tried again", len(pulling), big, hold, pulling)
	}
	if len(deferred) != 1 || !strings.Contains(deferred[0], "needs ") || !strings.Contains(deferred[0], "free above the threshold") {
		t.Errorf("ImagePullDeferred events %q: want one, with the figures", deferred)
	}
	lowest, capacity := watch()
	if reserve := capacity * 15 / 100; lowest < reserve {
		t.Errorf("the image filesystem had %d bytes available at its lowest, under the threshold imagefs.available<15%% (%d of %d)", lowest, reserve, capacity)
	}
	t.Logf("image filesystem: %d of %d bytes available at the lowest", lowest, capacity)

	tg.writeManifest("small.yaml", good)
	tg.waitPod(startTimeout, "small", "the update no longer deferred", func(v *podview.View) error {
		if u := conditionOf(v, pod.ConditionUpdateReady); u.Type != "" {
			return fmt.Errorf("condition %+v", u)
		}
		return nil
	})
	if now, ok, err := tg.container(uid, "main"); err != nil || !ok || now.ID != c.ID || now.PID != c.PID {
		t.Errorf("container main %v (found %v, %v), want %s (pid %d) never restarted", now, ok, err, c.ID, c.PID)
	}
}

// smallFS returns the mount point of an ext4 filesystem of size bytes on a
// loop device, whose image file is under t.TempDir(); the end of the test
// unmounts it (lazily, if it is still busy).
func smallFS(t *testing.T, size int64) string {
	t.Helper()
	testutil.RequireCommand(t, "mkfs.ext4")
	testutil.RequireCommand(t, "mount")
	dir := t.TempDir()
	img, mnt := filepath.Join(dir, "fs.img"), filepath.Join(dir, "mnt")
	f, err := os.Create(img)
	must(t, err)
	must(t, f.Truncate(size))
	must(t, f.Close())
	must(t, os.Mkdir(mnt, 0o755))
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", "-m", "0", img).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v: %s", err, out)
	}
	if out, err := exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount %s: %v: %s", img, err, out)
	}
	t.Cleanup(func() { unmount(t, mnt) })
	return mnt
}

// mountTmpfs mounts a tmpfs of size bytes on dir, one of tug's
// directories: tug's clean-up unmounts it with the rest (unmountUnder),
// once tug has stopped.
func mountTmpfs(t *testing.T, dir string, size int64) {
	t.Helper()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0755", size)); err != nil {
		t.Fatalf("mount a tmpfs on %s: %v", dir, err)
	}
}

// unmount unmounts dir, lazily when it is busy; one not mounted is fine.
func unmount(t *testing.T, dir string) {
	err := syscall.Unmount(dir, 0)
	if err == syscall.EBUSY {
		err = syscall.Unmount(dir, syscall.MNT_DETACH)
	}
	if err != nil && err != syscall.EINVAL && err != syscall.ENOENT {
		t.Errorf("unmount %s: %v", dir, err)
	}
}

// startContainerd starts a containerd of the test's own whose root is
// root (its state, socket and log under t.TempDir()), waits until it
// answers, and returns its socket. The end of the test stops it (SIGTERM,
// then SIGKILL), after tug's clean-up has removed the containers.
func startContainerd(t *testing.T, root string) string {
	t.Helper()
	testutil.RequireCommand(t, "containerd")
	dir, err := os.MkdirTemp("", "tugctrd") // short: the socket's path has a limit
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "c.sock")
	out, err := exec.Command("containerd", "--version").Output()
	must(t, err)
	version, disabled := 2, `"io.containerd.grpc.v1.cri"`
	if f := strings.Fields(string(out)); len(f) >= 3 && !strings.HasPrefix(strings.TrimPrefix(f[2], "v"), "1.") {
		version, disabled = 3, `"io.containerd.grpc.v1.cri", "io.containerd.cri.v1.runtime", "io.containerd.cri.v1.images"`
	}
	cfg := fmt.Sprintf(`version = %d
root = %q
state = %q
disabled_plugins = [%s]

[grpc]
  address = %q

[ttrpc]
  address = %q

[plugins."io.containerd.internal.v1.opt"]
  path = %q
`, version, root, filepath.Join(dir, "state"), disabled, sock, sock+".ttrpc", filepath.Join(dir, "opt"))
	cfgPath := filepath.Join(dir, "containerd.toml")
	must(t, os.WriteFile(cfgPath, []byte(cfg), 0o644))
	logf, err := os.Create(filepath.Join(dir, "containerd.log"))
	must(t, err)
	cmd := exec.Command("containerd", "--config", cfgPath)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	must(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			if b, err := os.ReadFile(logf.Name()); err == nil {
				t.Logf("the test's containerd's log:\n%s", b)
			}
		}
	})
	waitFor(t, 30*time.Second, "the test's containerd to answer", func() (bool, error) {
		client, err := containerd.New(sock, containerd.WithTimeout(time.Second))
		if err != nil {
			return false, err
		}
		defer client.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err = client.Version(ctx)
		return err == nil, err
	})
	return sock
}

// watchAvailable reads the bytes available on the filesystem of path every
// 100 ms until the test ends; the function it returns reports the lowest
// reading so far and the capacity.
func watchAvailable(t *testing.T, path string) func() (lowest, capacity int64) {
	t.Helper()
	var (
		mu        sync.Mutex
		low, capa int64 = -1, 0
	)
	read := func() {
		var st syscall.Statfs_t
		if syscall.Statfs(path, &st) != nil {
			return
		}
		avail := int64(st.Bavail) * st.Bsize
		mu.Lock()
		if low < 0 || avail < low {
			low = avail
		}
		capa = int64(st.Blocks) * st.Bsize
		mu.Unlock()
	}
	read()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				read()
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	return func() (int64, int64) {
		read()
		mu.Lock()
		defer mu.Unlock()
		return low, capa
	}
}

// TestPullLeftoversFreedFirst: on the same small containerd root, a pod's
// pull of an image with a 56 MiB layer is cut for good once 40 MiB of the
// layer have come (a proxy resets it, and every later try at once), and
// the pod is removed: what the pull fetched stays under its lease for
// resuming. A new pod's image (a 50 MiB layer) fits only if those 40 MiB
// are freed: they are (the image GC frees failed pulls' leftovers first),
// the pod runs, its pull is not deferred, and the running pod is neither
// restarted nor evicted.
func TestPullLeftoversFreedFirst(t *testing.T) {
	t.Parallel()
	const (
		fsSize = 200 << 20
		cutAt  = 40 << 20
	)
	testutil.RequireRoot(t)
	ctrRoot := smallFS(t, fsSize)
	addr := startContainerd(t, ctrRoot)
	watch := watchAvailable(t, ctrRoot)

	reg := startRegistry(t, registryOpts{})
	failing, layer := pushRandomImage(t, reg, "tug/cut:v1", 56<<20)
	fits, _ := pushRandomImage(t, reg, "tug/fits:v1", 50<<20)
	tg := startTug(t, tugOpts{containerd: addr, args: rolloutArgs, beforeStart: func(tg *tug) {
		mountTmpfs(t, tg.rootDir, 64<<20)
		startResetProxy(t, tg.netns, reg.Addr, layer.Digest.String(), cutAt)
	}})
	const script = "while :; do sleep 1; done"
	tg.writeManifest("small.yaml", rolloutPod("small", tg.image, script, nil, ""))
	c := tg.waitRunning(startTimeout, "small", "main", 0)

	tg.writeManifest("cut.yaml", rolloutPod("cut", failing, script, nil, ""))
	ctx := namespaces.WithNamespace(context.Background(), tg.ns)
	tg.waitPod(startTimeout, "cut", "its pull failed", func(v *podview.View) error {
		if w := mainStatus(v).State.Waiting; w == nil || (w.Reason != pod.ReasonErrImagePull && w.Reason != pod.ReasonImagePullBackOff) {
			return fmt.Errorf("main %+v", mainStatus(v).State)
		}
		return nil
	})
	tg.removeManifest("cut.yaml")
	tg.waitGone(startTimeout, tg.uid("cut"), "the pod whose pull was cut to be gone")
	if n, err := ingested(ctx, tg); err != nil || n < cutAt*9/10 {
		t.Fatalf("%d bytes ingested (%v) after the pod was removed, want the %d the pull fetched kept", n, err, cutAt)
	}

	tg.writeManifest("fits.yaml", rolloutPod("fits", fits, script, nil, ""))
	tg.waitRunning(startTimeout, "fits", "main", 0)
	tg.waitForOutput(10*time.Second, "freed what a failed pull kept")
	if n, err := ingested(ctx, tg); err != nil || n != 0 {
		t.Errorf("%d bytes ingested (%v) once the pod runs, want the failed pull's leftovers freed", n, err)
	}
	for _, r := range tg.eventReasons(tg.uid("fits")) {
		if r == pod.ReasonImagePullDeferred {
			t.Errorf("an ImagePullDeferred event for pod fits: the leftovers were not freed first")
		}
	}
	for _, e := range mustEvents(t, tg, tg.uid("small")) {
		if e.Reason == "Evicted" || strings.Contains(e.Message, "evict") {
			t.Errorf("event %s: %s; want no eviction", e.Reason, e.Message)
		}
	}
	if now, ok, err := tg.container(tg.uid("small"), "main"); err != nil || !ok || now.ID != c.ID || now.PID != c.PID {
		t.Errorf("container main of pod small %v (found %v, %v), want %s (pid %d) running on", now, ok, err, c.ID, c.PID)
	}
	lowest, capacity := watch()
	if reserve := capacity * 15 / 100; lowest < reserve {
		t.Errorf("the image filesystem had %d bytes available at its lowest, under the threshold imagefs.available<15%% (%d of %d)", lowest, reserve, capacity)
	}
	t.Logf("image filesystem: %d of %d bytes available at the lowest", lowest, capacity)
}

// ingested returns the bytes of the partial downloads (ingests) in tug's
// namespace.
func ingested(ctx context.Context, tg *tug) (int64, error) {
	sts, err := tg.client.ContentStore().ListStatuses(ctx)
	var n int64
	for _, st := range sts {
		n += st.Offset
	}
	return n, err
}

// mustEvents returns the events of pod uid.
func mustEvents(t *testing.T, tg *tug, uid string) []events.Event {
	t.Helper()
	evs, err := tg.api().Events(context.Background(), api.EventQuery{UID: uid})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// startResetProxy forwards to upstream from the same address inside the
// node (netns), except GETs of blob dgst: the first one gets cutAt bytes,
// then a reset; every later one a reset at once. A pull of the blob fails
// for good with cutAt bytes of it fetched.
func startResetProxy(t *testing.T, netns, upstream, dgst string, cutAt int64) {
	t.Helper()
	var (
		mu   sync.Mutex
		sent bool
	)
	reset := func(w http.ResponseWriter) {
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			if tc, ok := conn.(*net.TCPConn); ok {
				tc.SetLinger(0)
			}
			conn.Close()
		}
	}
	client := &http.Client{Transport: &http.Transport{DisableCompression: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		blob := r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/blobs/"+dgst)
		mu.Lock()
		first := blob && !sent
		if blob {
			sent = true
		}
		mu.Unlock()
		if blob && !first {
			reset(w)
			return
		}
		out, err := http.NewRequestWithContext(r.Context(), r.Method, "http://"+upstream+r.URL.RequestURI(), r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		out.Header, out.ContentLength = r.Header.Clone(), r.ContentLength
		resp, err := client.Do(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, vs := range resp.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(resp.StatusCode)
		if !first {
			io.Copy(w, resp.Body)
			return
		}
		if _, err := io.CopyN(w, resp.Body, cutAt); err != nil {
			return
		}
		_ = http.NewResponseController(w).Flush()
		time.Sleep(time.Second) // what was sent reaches tug before the reset
		reset(w)
	})
	l := listenIn(t, netns, "tcp", upstream)
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
}
