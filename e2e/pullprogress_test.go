//go:build e2e

package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"tug/internal/api"
	"tug/internal/events"
	"tug/internal/pod"
	"tug/internal/podview"
	"tug/internal/testutil"
)

// Image pulls as they are seen: the kubelet's Pulling and Pulled events,
// the progress of a slow pull in the container's waiting message, and the
// cut of a pull that stalls (--image-pull-progress-deadline), through a
// server in front of the test registry that serves its image with a layer
// of its own (busybox's, 12 MB, recompressed) and slows or stalls it.

// TestPullEvents: a pod whose image is pulled from the registry has a
// Pulling event, then a Pulled one with the kubelet's message, in tug
// events.
func TestPullEvents(t *testing.T) {
	t.Parallel()
	ref := testutil.RegistryImage(t)
	registry := os.Getenv(testutil.EnvRegistry)
	tg := startTug(t, tugOpts{noImageArchive: true, beforeStart: func(tg *tug) { tg.relay(registry) }})
	tg.writeManifest("pull.yaml", pullPod("pull", ref, ""))
	tg.waitRunning(startTimeout, "pull", "main", 0)

	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	evs, err := tg.api().Events(ctx, api.EventQuery{UID: tg.uid("pull")})
	if err != nil {
		t.Fatalf("GET /events: %v", err)
	}
	at := func(reason string) (int, events.Event) {
		for i, e := range evs {
			if e.Reason == reason {
				return i, e
			}
		}
		return -1, events.Event{}
	}
	iPulling, pulling := at("Pulling")
	iPulled, pulled := at("Pulled")
	if iPulling < 0 || iPulled < iPulling {
		t.Fatalf("events %+v: want Pulling, then Pulled", evs)
	}
	if want := fmt.Sprintf("Pulling image %q", ref); pulling.Message != want || pulling.Type != "Normal" {
		t.Errorf("Pulling event: %s %q, want Normal %q", pulling.Type, pulling.Message, want)
	}
	if want := fmt.Sprintf("Successfully pulled image %q in ", ref); !strings.HasPrefix(pulled.Message, want) ||
		!strings.Contains(pulled.Message, " including waiting). Image size: ") || !strings.HasSuffix(pulled.Message, " bytes.") ||
		pulled.Type != "Normal" || pulled.InvolvedObject.FieldPath != "spec.containers{main}" {
		t.Errorf("Pulled event: %s %q on %q, want Normal %q... with the time and the image size, on the container", pulled.Type, pulled.Message, pulled.InvolvedObject.FieldPath, want)
	}
	out, err := exec.Command(tugBin, "events", "--socket", tg.socketPath(), staticName("pull")).CombinedOutput()
	lines := string(out)
	pullingLine := findLine(lines, "Normal", "Pulling", fmt.Sprintf("Pulling image %q", ref))
	pulledLine := findLine(lines, "Normal", "Pulled", "Successfully pulled image", "Image size:")
	if err != nil || pullingLine == "" || pulledLine == "" || strings.Index(lines, pullingLine) > strings.Index(lines, pulledLine) {
		t.Errorf("tug events: %v; want a Pulling line, then a Pulled one:\n%s", err, out)
	}
}

// TestPullStallCut: with --image-pull-progress-deadline 3s, a pull whose
// layer stops coming is cut with ErrImagePull and a message that names
// the stall (and the pod runs once the registry answers again), while a
// pull that is slow but keeps fetching runs for longer than the deadline,
// shows its progress in the container's waiting message, and is not cut.
func TestPullStallCut(t *testing.T) {
	t.Parallel()
	const deadline = "3s"
	t.Run("stalled", func(t *testing.T) {
		proxy := slowRegistry(t, 1<<20, 0, 0)
		tg := startTug(t, tugOpts{noImageArchive: true, beforeStart: func(tg *tug) { tg.relay(proxy.addr) },
			args: []string{"--image-pull-progress-deadline", deadline, "--crash-loop-back-off-initial", "1s"}})
		began := time.Now()
		tg.writeManifest("stall.yaml", pullPod("stall", proxy.ref, ""))
		// The container's ErrImagePull lasts until the pull is retried:
		// its event stays. A machine under load may also cut a pull
		// before the blob (no byte of the manifest for 3 s, which is a
		// stall too); the cut looked for is one after the proxy stalled
		// the blob, on a retry if need be.
		var cut events.Event
		waitFor(t, startTimeout, "an ErrImagePull event naming the stall of the blob", func() (bool, error) {
			if proxy.stalls() == 0 {
				return false, nil
			}
			ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
			defer cancel()
			// A second cut's event is folded into the first one's (same
			// reason, a count), so the cut of the blob is looked for in
			// tug's log, and the event for the stall in the events.
			blobCut := false
			for _, l := range strings.Split(tg.output(), "\n") {
				if strings.Contains(l, "cutting image pull") && strings.Contains(l, "pull stalled: no progress for 3s") && !strings.Contains(l, "(0 B of 0 B)") {
					blobCut = true
				}
			}
			evs, err := tg.api().Events(ctx, api.EventQuery{UID: tg.uid("stall")})
			for _, e := range evs {
				if blobCut && e.Type == "Warning" && strings.Contains(e.Message, pod.ReasonErrImagePull) && strings.Contains(e.Message, "pull stalled: no progress for 3s") {
					cut = e
					return true, nil
				}
			}
			return false, err
		})
		if took := time.Since(began); took < 3*time.Second {
			t.Errorf("the pull was cut %s after the manifest was written: sooner than the deadline", took)
		}
		t.Logf("cut: %s %s", cut.Reason, cut.Message)
		if proxy.stalls() == 0 {
			t.Fatal("the proxy stalled no blob: the test tested nothing")
		}
		// The registry answers again: the retried pull gets the image.
		proxy.resume()
		tg.waitRunning(startTimeout, "stall", "main", 0)
	})
	t.Run("throttled", func(t *testing.T) {
		// 32 KiB every 25 ms: about 10 s for the 12 MB layer.
		proxy := slowRegistry(t, 0, 32<<10, 25*time.Millisecond)
		tg := startTug(t, tugOpts{noImageArchive: true, beforeStart: func(tg *tug) { tg.relay(proxy.addr) },
			args: []string{"--image-pull-progress-deadline", deadline}})
		began := time.Now()
		tg.writeManifest("slow.yaml", pullPod("slow", proxy.ref, ""))
		v := tg.waitPod(startTimeout, "slow", "the pull's progress in the waiting message", func(v *podview.View) error {
			for _, cs := range v.Status.ContainerStatuses {
				if w := cs.State.Waiting; w != nil && w.Reason == pod.ReasonContainerCreating &&
					strings.HasPrefix(w.Message, fmt.Sprintf("Pulling image %q: ", proxy.ref)) && strings.Contains(w.Message, " MB of ") {
					return nil
				}
			}
			return errors.New("no progress shown")
		})
		t.Logf("progress: %s", v.Status.ContainerStatuses[0].State.Waiting.Message)
		tg.waitRunning(startTimeout, "slow", "main", 0)
		if took := time.Since(began); took < 5*time.Second {
			t.Errorf("the throttled pull took %s: not longer than the deadline (%s), so it tested nothing", took, deadline)
		}
		if strings.Contains(tg.output(), "cutting image pull") || strings.Contains(tg.output(), "pull stalled") {
			t.Errorf("a pull that kept fetching was cut:\n%s", findLine(tg.output(), "cutting image pull"))
		}
	})
	t.Run("update waits on it", func(t *testing.T) {
		// A running pod's image changes to one that comes slowly: the old
		// container keeps running while tug pods says the update waits on
		// the pull, with its progress; then the new one runs.
		proxy := slowRegistry(t, 0, 32<<10, 25*time.Millisecond)
		tg := startTug(t, tugOpts{beforeStart: func(tg *tug) { tg.relay(proxy.addr) },
			args: []string{"--image-pull-progress-deadline", deadline}})
		tg.writeManifest("upd.yaml", shPod("upd", tg.image, idle))
		tg.waitRunning(startTimeout, "upd", "main", 0)
		old := tg.waitPod(startTimeout, "upd", "its container's ID", func(v *podview.View) error {
			if len(v.Status.ContainerStatuses) == 0 || v.Status.ContainerStatuses[0].ContainerID == "" {
				return errors.New("no container ID")
			}
			return nil
		}).Status.ContainerStatuses[0].ContainerID
		tg.writeManifest("upd.yaml", pullPod("upd", proxy.ref, ""))
		var seen string
		tg.waitFor(startTimeout, "tug pods saying the update waits on the pull, with its progress", func() (bool, error) {
			out, _, _ := tg.runCLI("pods")
			seen = out
			return strings.Contains(out, "Running (update: Pulling)") && strings.Contains(out, "the update waits on its image: Pulling image") &&
				strings.Contains(out, " MB of "), nil
		})
		t.Logf("tug pods while the update pulls:\n%s", seen)
		v := tg.waitPod(startTimeout, "upd", "the old container still running", func(v *podview.View) error { return nil })
		if cs := v.Status.ContainerStatuses[0]; cs.ContainerID != old || cs.State.Running == nil || cs.Image == proxy.ref {
			t.Errorf("while the update pulls, the container is %s (%s, running %v), want the old one %s running", cs.ContainerID, cs.Image, cs.State.Running != nil, old)
		}
		tg.waitPod(startTimeout, "upd", "the new image running, and no update condition", func(v *podview.View) error {
			cs := v.Status.ContainerStatuses[0]
			for _, c := range v.Status.Conditions {
				if c.Type == pod.ConditionUpdateReady {
					return fmt.Errorf("condition %s %s %s", c.Type, c.Status, c.Reason)
				}
			}
			if cs.Image != proxy.ref || cs.State.Running == nil {
				return fmt.Errorf("container %s running %v", cs.Image, cs.State.Running != nil)
			}
			return nil
		})
		// The image is pulled before the old container stops, and the
		// start that follows uses it: one resolution of its tag, though
		// its imagePullPolicy is Always.
		if n := proxy.resolves(); n != 1 {
			t.Errorf("the update resolved %s %d times, want once (pulled ahead of the start, not again by it)", proxy.ref, n)
		}
	})
}

// registryProxy serves the test registry's image with its layer
// recompressed (gzip, no compression, a random comment): a blob no
// namespace of the shared containerd has, so that a pull must fetch it
// (containerd shares blobs across namespaces and fetches none it has).
type registryProxy struct {
	ref, addr string // the image through it, and its address

	mu       sync.Mutex
	stalled  int           // blobs stalled so far
	resolved int           // requests of the manifest by its tag: one per pull
	resumed  chan struct{} // closed by resume
}

// resolves returns how often the image's tag was resolved: once per pull.
func (p *registryProxy) resolves() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.resolved
}

func (p *registryProxy) stalls() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stalled
}

// resume makes stalled blobs go on, and later ones pass.
func (p *registryProxy) resume() { close(p.resumed) }

// slowRegistry starts a registryProxy on a free loopback port. It serves
// the layer's first after bytes at once; then, with tick 0, nothing more
// (a stall) until resume or the end of the test, else at most chunk bytes
// per tick. After resume, blobs are served whole.
func slowRegistry(t *testing.T, after int64, chunk int, tick time.Duration) *registryProxy {
	t.Helper()
	get, repo, tag := testImageGetter(t)
	var m ocispec.Manifest
	must(t, json.Unmarshal(get("/manifests/"+tag, ocispec.MediaTypeImageManifest), &m))
	if len(m.Layers) != 1 {
		t.Fatalf("the test image has %d layers, want 1", len(m.Layers))
	}
	layer := get("/blobs/"+m.Layers[0].Digest.String(), "*/*")
	if m.Layers[0].MediaType != ocispec.MediaTypeImageLayer {
		t.Fatalf("the test image's layer is %s, want an uncompressed tar", m.Layers[0].MediaType)
	}
	// A file of its own in the layer: another diff ID, so no snapshot of
	// the shared containerd has it either (an unpack finding its snapshot
	// fetches nothing).
	layer = withFile(t, layer, "etc/tug-proxy", t.Name()+" "+strconv.FormatInt(time.Now().UnixNano(), 10))
	var config ocispec.Image
	must(t, json.Unmarshal(get("/blobs/"+m.Config.Digest.String(), "*/*"), &config))
	config.RootFS.DiffIDs = []digest.Digest{digest.FromBytes(layer)}
	configBlob, err := json.Marshal(config)
	must(t, err)
	m.Config.Digest, m.Config.Size = digest.FromBytes(configBlob), int64(len(configBlob))
	blobs := map[string][]byte{m.Config.Digest.String(): configBlob}
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.NoCompression)
	must(t, err)
	zw.Comment = fmt.Sprintf("%s %d", t.Name(), time.Now().UnixNano())
	_, err = zw.Write(layer)
	must(t, err)
	must(t, zw.Close())
	layerDigest := digest.FromBytes(gz.Bytes())
	blobs[layerDigest.String()] = gz.Bytes()
	m.Layers = []ocispec.Descriptor{{MediaType: ocispec.MediaTypeImageLayerGzip, Digest: layerDigest, Size: int64(gz.Len())}}
	manifest, err := json.Marshal(m)
	must(t, err)
	manifestDigest := digest.FromBytes(manifest)

	p := &registryProxy{resumed: make(chan struct{})}
	done := make(chan struct{}) // closed at the end of the test
	mux := http.NewServeMux()
	mux.HandleFunc("/v2/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
	})
	mux.HandleFunc("/v2/"+repo+"/manifests/{ref}", func(w http.ResponseWriter, r *http.Request) {
		ref := r.PathValue("ref")
		if ref != tag && ref != manifestDigest.String() {
			http.NotFound(w, r)
			return
		}
		if ref == tag {
			p.mu.Lock()
			p.resolved++
			p.mu.Unlock()
		}
		w.Header().Set("Content-Type", ocispec.MediaTypeImageManifest)
		w.Header().Set("Docker-Content-Digest", manifestDigest.String())
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(manifest))
	})
	mux.HandleFunc("/v2/"+repo+"/blobs/{digest}", func(w http.ResponseWriter, r *http.Request) {
		dgst := r.PathValue("digest")
		blob, ok := blobs[dgst]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Docker-Content-Digest", dgst)
		w.Header().Set("Content-Type", "application/octet-stream")
		select {
		case <-p.resumed:
			http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(blob))
			return
		default:
		}
		if dgst != layerDigest.String() || r.Method != http.MethodGet || r.Header.Get("Range") != "" {
			http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(blob))
			return
		}
		p.serveSlowly(w, r, blob, after, chunk, tick, done)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(done) }) // before srv.Close, which waits for the handlers
	p.addr = srv.Listener.Addr().String()
	p.ref = p.addr + "/" + repo + ":" + tag
	return p
}

// withFile returns the tar archive layer with one more regular file, name,
// holding content.
func withFile(t *testing.T, layer []byte, name, content string) []byte {
	t.Helper()
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	tr := tar.NewReader(bytes.NewReader(layer))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		must(t, err)
		must(t, tw.WriteHeader(hdr))
		_, err = io.Copy(tw, tr)
		must(t, err)
	}
	must(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg}))
	_, err := tw.Write([]byte(content))
	must(t, err)
	must(t, tw.Close())
	return out.Bytes()
}

// serveSlowly writes blob as slowRegistry says.
func (p *registryProxy) serveSlowly(w http.ResponseWriter, r *http.Request, blob []byte, after int64, chunk int, tick time.Duration, done <-chan struct{}) {
	w.Header().Set("Content-Length", strconv.Itoa(len(blob)))
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	send := func(b []byte) bool {
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send(blob[:min(after, int64(len(blob)))]) {
		return
	}
	blob = blob[min(after, int64(len(blob))):]
	if tick == 0 {
		p.mu.Lock()
		p.stalled++
		p.mu.Unlock()
		select {
		case <-p.resumed:
			send(blob)
		case <-r.Context().Done():
		case <-done:
		}
		return
	}
	for len(blob) > 0 {
		select {
		case <-time.After(tick):
		case <-r.Context().Done():
			return
		case <-done:
			return
		}
		n := min(chunk, len(blob))
		if !send(blob[:n]) {
			return
		}
		blob = blob[n:]
	}
}
