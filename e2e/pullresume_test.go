//go:build e2e

package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
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

// Pulls over a link that breaks and registries that cannot be reached: a
// pull cut part-way resumes from what containerd's content store holds of
// the blob (a Range request for the rest), and an imagePullPolicy Always
// pull that reaches no registry runs the cached image
// (--image-pull-offline=use-cached) or fails (fail).

// TestPullResume: a test registry holds an image with a 12 MiB layer of
// random bytes behind a proxy that resets the connection of each of the
// layer's first three GETs once 1 MiB of it has passed. The pull fails
// three times, each next attempt asks for the rest only (Range), and the
// pod runs, the proxy having sent little more than the layer's size; the
// last attempt, throttled, records a Pulling event with its progress.
func TestPullResume(t *testing.T) {
	t.Parallel()
	const (
		layerSize = 12 << 20
		cutAt     = 1 << 20
		cuts      = 3
	)
	reg := startRegistry(t, registryOpts{})
	ref, layer := pushRandomImage(t, reg, "tug/resume:v1", layerSize)
	var proxy *cutProxy
	tg := startTug(t, tugOpts{noImageArchive: true, beforeStart: func(tg *tug) {
		// 48 KiB every 50 ms once the cuts are done: the last attempt
		// lasts about 10 s, long enough for a progress event.
		proxy = startCutProxy(t, tg.netns, reg.Addr, layer.Digest.String(), cutAt, cuts, 48<<10, 50*time.Millisecond)
	}, args: []string{"--crash-loop-back-off-initial", "1s"}})
	tg.writeManifest("resume.yaml", pullPod("resume", ref, ""))
	tg.waitRunning(startTimeout, "resume", "main", 0)

	st := proxy.stats()
	t.Logf("layer %d bytes; proxy: %d cuts, %d bytes of it sent, ranges %q", layer.Size, st.cuts, st.sent, st.ranges)
	if st.cuts != cuts {
		t.Fatalf("the proxy cut %d GETs of the layer, want %d: the test tested nothing", st.cuts, cuts)
	}
	if limit := layer.Size + layer.Size/10; st.sent > limit {
		t.Errorf("the proxy sent %d bytes of the %d-byte layer (limit %d): the pull fetched again what it had", st.sent, layer.Size, limit)
	}
	if len(st.ranges) < cuts+1 {
		t.Fatalf("%d GETs of the layer, want at least %d", len(st.ranges), cuts+1)
	}
	var last int64
	for i, r := range st.ranges[1:] {
		from, ok := rangeStart(r)
		if !ok || from <= last {
			t.Errorf("GET %d of the layer asked for Range %q, want bytes=N- past %d, where the previous one was cut", i+2, r, last)
		}
		last = from
	}
	if !strings.Contains(tg.output(), "resuming an earlier pull") {
		t.Error("tug did not log that it resumed an earlier pull")
	}

	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	evs, err := tg.api().Events(ctx, api.EventQuery{UID: tg.uid("resume")})
	if err != nil {
		t.Fatalf("GET /events: %v", err)
	}
	var failed, progress int
	for _, e := range evs {
		switch {
		case e.Reason == "Failed" && e.Type == "Warning":
			failed++
		case e.Reason == "Pulling" && e.Type == "Normal" && strings.HasPrefix(e.Message, fmt.Sprintf("Pulling image %q: ", ref)) && strings.Contains(e.Message, " MB of "):
			progress++
			t.Logf("progress event: %s", e.Message)
		}
	}
	if failed == 0 || progress == 0 {
		t.Errorf("events %+v: want the Failed warnings of the cut pulls and a Pulling event with the progress of the long one", evs)
	}
}

// TestPullResumeAfterRestart: tug is killed while it pulls a 12 MiB layer
// that comes slowly; the tug started after it takes over the lease its
// predecessor left and asks for the rest of the layer only.
func TestPullResumeAfterRestart(t *testing.T) {
	t.Parallel()
	const layerSize = 12 << 20
	reg := startRegistry(t, registryOpts{})
	ref, layer := pushRandomImage(t, reg, "tug/restart:v1", layerSize)
	var proxy *cutProxy
	tg := startTug(t, tugOpts{noImageArchive: true, beforeStart: func(tg *tug) {
		// 64 KiB every 50 ms: about 10 s for the layer.
		proxy = startCutProxy(t, tg.netns, reg.Addr, layer.Digest.String(), 0, 0, 64<<10, 50*time.Millisecond)
	}})
	tg.writeManifest("restart.yaml", pullPod("restart", ref, ""))
	waitFor(t, startTimeout, "3 MiB of the layer sent", func() (bool, error) {
		return proxy.stats().sent >= 3<<20, nil
	})
	tg.Kill()
	killedAt := proxy.stats().sent
	tg.Start()
	tg.waitRunning(startTimeout, "restart", "main", 0)

	st := proxy.stats()
	t.Logf("layer %d bytes; killed after %d; proxy sent %d bytes of it, ranges %q", layer.Size, killedAt, st.sent, st.ranges)
	if limit := layer.Size + layer.Size/10; st.sent > limit {
		t.Errorf("the proxy sent %d bytes of the %d-byte layer (limit %d): the restarted tug fetched again what it had", st.sent, layer.Size, limit)
	}
	if len(st.ranges) < 2 {
		t.Fatalf("GETs of the layer: %q, want a second one after the restart", st.ranges)
	}
	if from, ok := rangeStart(st.ranges[len(st.ranges)-1]); !ok || from == 0 {
		t.Errorf("the last GET of the layer asked for Range %q, want bytes=N- with N > 0", st.ranges[len(st.ranges)-1])
	}
}

// rangeStart returns N of a "bytes=N-" Range header.
func rangeStart(r string) (int64, bool) {
	from, ok := strings.CutPrefix(r, "bytes=")
	if !ok {
		return 0, false
	}
	from, _, ok = strings.Cut(from, "-")
	n, err := strconv.ParseInt(from, 10, 64)
	return n, ok && err == nil
}

// TestPullOffline: after a first pull of an Always image, its registry
// stops. With --image-pull-offline=use-cached a second pod of that image
// runs the cached one, with a PullOfflineUsingCache warning and the
// tug.io/ImageFromCache condition (in its status and tug describe), which
// a pull after the registry is back clears; with fail the second pod fails
// with ErrImagePull, as with the kubelet.
func TestPullOffline(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"use-cached", "fail"} {
		t.Run(mode, func(t *testing.T) {
			reg := startRegistry(t, registryOpts{shared: true})
			_, path, _ := strings.Cut(testutil.RegistryImage(t), "/")
			ref := reg.Ref(path)
			tg := startTug(t, tugOpts{noImageArchive: true, beforeStart: func(tg *tug) { tg.relay(reg.Addr) },
				args: []string{"--crash-loop-back-off-initial", "1s", "--image-pull-offline", mode}})
			tg.writeManifest("first.yaml", alwaysPod("first", ref, 0))
			tg.waitRunning(startTimeout, "first", "main", 0)
			reg.Stop()
			tg.writeManifest("second.yaml", alwaysPod("second", ref, 0))
			if mode == "fail" {
				tg.waitPod(startTimeout, "second", "ErrImagePull", func(v *podview.View) error {
					for _, cs := range v.Status.ContainerStatuses {
						if w := cs.State.Waiting; w != nil && (w.Reason == pod.ReasonErrImagePull || w.Reason == pod.ReasonImagePullBackOff) {
							return nil
						}
					}
					return fmt.Errorf("no pull error")
				})
				if e := findEvent(t, tg, "second", pod.ReasonPullOfflineUsingCache); e != nil {
					t.Errorf("with fail, a %s event: %s", e.Reason, e.Message)
				}
				return
			}
			tg.waitRunning(startTimeout, "second", "main", 0)
			v := tg.waitPod(startTimeout, "second", "the ImageFromCache condition", func(v *podview.View) error {
				if c := condition(v, pod.ConditionImageFromCache); c == nil || c.Status != "True" {
					return fmt.Errorf("no %s condition", pod.ConditionImageFromCache)
				}
				return nil
			})
			c := condition(&v, pod.ConditionImageFromCache)
			t.Logf("condition: %s %s %s: %s", c.Type, c.Status, c.Reason, c.Message)
			if c.Reason != pod.ReasonPullOfflineUsingCache || !strings.Contains(c.Message, ref) {
				t.Errorf("condition %+v: want reason %s and a message naming %s", c, pod.ReasonPullOfflineUsingCache, ref)
			}
			e := findEvent(t, tg, "second", pod.ReasonPullOfflineUsingCache)
			if e == nil || e.Type != "Warning" || !strings.Contains(e.Message, ref) {
				t.Fatalf("event %+v: want a Warning %s naming %s", e, pod.ReasonPullOfflineUsingCache, ref)
			}
			t.Logf("event: %s %s: %s", e.Type, e.Reason, e.Message)
			out, err := exec.Command(tugBin, "describe", "--socket", tg.socketPath(), staticName("second")).CombinedOutput()
			if err != nil || findLine(string(out), pod.ConditionImageFromCache, "True") == "" {
				t.Errorf("tug describe: %v, want the %s condition True:\n%s", err, pod.ConditionImageFromCache, out)
			}
			// The registry is back: the next pull (an update of the
			// container) clears the condition.
			reg.Start()
			tg.writeManifest("second.yaml", alwaysPod("second", ref, 1))
			tg.waitPod(startTimeout, "second", "no ImageFromCache condition once a pull succeeded", func(v *podview.View) error {
				if c := condition(v, pod.ConditionImageFromCache); c != nil {
					return fmt.Errorf("condition %s %s", c.Type, c.Status)
				}
				if len(v.Status.ContainerStatuses) == 0 || v.Status.ContainerStatuses[0].State.Running == nil {
					return fmt.Errorf("not running")
				}
				return nil
			})
		})
	}
}

// alwaysPod is a pod of image ref, always pulled; version changes its
// container (an update that pulls again).
func alwaysPod(name, ref string, version int) string {
	return podYAML{name: name, grace: 1, containers: []ctrYAML{{name: "main", image: ref,
		script: fmt.Sprintf("%s # %d", idle, version), extra: "      imagePullPolicy: Always\n"}}}.String()
}

// condition returns v's condition of type typ, nil if it has none.
func condition(v *podview.View, typ string) *pod.Condition {
	for i := range v.Status.Conditions {
		if v.Status.Conditions[i].Type == typ {
			return &v.Status.Conditions[i]
		}
	}
	return nil
}

// findEvent returns the last event of the pod named name with reason, nil
// if there is none.
func findEvent(t *testing.T, tg *tug, name, reason string) *events.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	evs, err := tg.api().Events(ctx, api.EventQuery{UID: tg.uid(name)})
	if err != nil {
		t.Fatalf("GET /events: %v", err)
	}
	var found *events.Event
	for i := range evs {
		if evs[i].Reason == reason {
			found = &evs[i]
		}
	}
	return found
}

// pushRandomImage pushes to reg, under repo:tag, the test registry's
// busybox image with one more layer: an uncompressed tar holding size
// random bytes (incompressible, and no other test's). It returns the
// image's reference and that layer's descriptor.
func pushRandomImage(t *testing.T, reg *testRegistry, repoTag string, size int) (string, ocispec.Descriptor) {
	t.Helper()
	base := testutil.RegistryImage(t) // 127.0.0.1:PORT/REPO:TAG
	host, rest, _ := strings.Cut(base, "/")
	baseRepo, baseTag, _ := strings.Cut(rest, ":")
	repo, tag, _ := strings.Cut(repoTag, ":")
	var m ocispec.Manifest
	must(t, json.Unmarshal(registryGet(t, host, baseRepo, "/manifests/"+baseTag, ocispec.MediaTypeImageManifest), &m))
	var config ocispec.Image
	must(t, json.Unmarshal(registryGet(t, host, baseRepo, "/blobs/"+m.Config.Digest.String(), "*/*"), &config))
	for _, l := range m.Layers {
		pushBlob(t, reg.Addr, repo, registryGet(t, host, baseRepo, "/blobs/"+l.Digest.String(), "*/*"))
	}

	random := make([]byte, size)
	_, err := rand.Read(random)
	must(t, err)
	var tarball bytes.Buffer
	tw := tar.NewWriter(&tarball)
	must(t, tw.WriteHeader(&tar.Header{Name: "tug-random", Mode: 0o644, Size: int64(size), Typeflag: tar.TypeReg}))
	_, err = tw.Write(random)
	must(t, err)
	must(t, tw.Close())
	layer := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayer, Digest: digest.FromBytes(tarball.Bytes()), Size: int64(tarball.Len())}
	pushBlob(t, reg.Addr, repo, tarball.Bytes())
	m.Layers = append(m.Layers, layer)
	config.RootFS.DiffIDs = append(config.RootFS.DiffIDs, layer.Digest)
	configBlob, err := json.Marshal(config)
	must(t, err)
	m.Config.Digest, m.Config.Size = digest.FromBytes(configBlob), int64(len(configBlob))
	pushBlob(t, reg.Addr, repo, configBlob)
	manifest, err := json.Marshal(m)
	must(t, err)
	req, err := http.NewRequest(http.MethodPut, "http://"+reg.Addr+"/v2/"+repo+"/manifests/"+tag, bytes.NewReader(manifest))
	must(t, err)
	req.Header.Set("Content-Type", ocispec.MediaTypeImageManifest)
	registryDo(t, req, http.StatusCreated)
	return reg.Ref(repoTag), layer
}

// registryGet returns the body of GET /v2/REPO/PATH from the registry at
// host.
func registryGet(t *testing.T, host, repo, path, accept string) []byte {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+host+"/v2/"+repo+path, nil)
	must(t, err)
	req.Header.Set("Accept", accept)
	return registryDo(t, req, http.StatusOK)
}

// pushBlob uploads blob to repo of the registry at addr (a monolithic
// upload: POST, then PUT with the digest).
func pushBlob(t *testing.T, addr, repo string, blob []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/v2/"+repo+"/blobs/uploads/", nil)
	must(t, err)
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("start an upload to %s: %s", addr, resp.Status)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	must(t, err)
	loc = (&url.URL{Scheme: "http", Host: addr}).ResolveReference(loc)
	q := loc.Query()
	q.Set("digest", digest.FromBytes(blob).String())
	loc.RawQuery = q.Encode()
	req, err = http.NewRequest(http.MethodPut, loc.String(), bytes.NewReader(blob))
	must(t, err)
	req.Header.Set("Content-Type", "application/octet-stream")
	registryDo(t, req, http.StatusCreated)
}

// registryDo sends req and returns the body of its answer, which must
// have status want.
func registryDo(t *testing.T, req *http.Request, want int) []byte {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %s: %s", req.Method, req.URL.Path, resp.Status, b)
	}
	return b
}

// cutProxy is an HTTP proxy, listening inside the node at the address of
// the registry it forwards to, that resets the connection of the first
// GETs of one blob once cutAt bytes of it have passed, then throttles that
// blob (chunk bytes per tick), and counts the bytes of it it sends and the
// Range of each of its GETs.
type cutProxy struct {
	upstream, digest string
	cutAt            int64
	chunk            int
	tick             time.Duration
	client           *http.Client

	mu       sync.Mutex
	cutsLeft int
	st       cutStats
}

// cutStats is what a cutProxy did to its blob.
type cutStats struct {
	cuts   int      // GETs cut
	sent   int64    // bytes sent
	ranges []string // the Range header of each GET ("" for none)
}

func (p *cutProxy) stats() cutStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.st
	st.ranges = append([]string(nil), st.ranges...)
	return st
}

// startCutProxy starts a cutProxy in front of upstream, listening at the
// same address inside the network namespace netns; it stops at the end of
// the test.
func startCutProxy(t *testing.T, netns, upstream, dgst string, cutAt int64, cuts, chunk int, tick time.Duration) *cutProxy {
	t.Helper()
	p := &cutProxy{upstream: upstream, digest: dgst, cutAt: cutAt, chunk: chunk, tick: tick, cutsLeft: cuts,
		client: &http.Client{
			Transport:     &http.Transport{DisableCompression: true},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}}
	l := listenIn(t, netns, "tcp", upstream)
	srv := &http.Server{Handler: p}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return p
}

func (p *cutProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	out, err := http.NewRequestWithContext(r.Context(), r.Method, "http://"+p.upstream+r.URL.RequestURI(), r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out.Header = r.Header.Clone()
	out.ContentLength = r.ContentLength
	resp, err := p.client.Do(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/blobs/"+p.digest) {
		io.Copy(w, resp.Body)
		return
	}
	p.mu.Lock()
	p.st.ranges = append(p.st.ranges, r.Header.Get("Range"))
	cut := p.cutsLeft > 0
	if cut {
		p.cutsLeft--
		p.st.cuts++
	}
	p.mu.Unlock()
	rc := http.NewResponseController(w)
	send := func(n int64) (int64, error) {
		sent, err := io.CopyN(w, resp.Body, n)
		p.mu.Lock()
		p.st.sent += sent
		p.mu.Unlock()
		if err == nil {
			err = rc.Flush()
		}
		return sent, err
	}
	if cut {
		if _, err := send(p.cutAt); err != nil {
			return
		}
		// What was sent reaches tug before the reset: the cut is where
		// the count says.
		time.Sleep(time.Second)
		conn, _, err := rc.Hijack()
		if err != nil {
			return
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			tc.SetLinger(0) // a reset, not an end of file: the read fails
		}
		conn.Close()
		return
	}
	for {
		if _, err := send(int64(p.chunk)); err != nil {
			return
		}
		select {
		case <-time.After(p.tick):
		case <-r.Context().Done():
			return
		}
	}
}
