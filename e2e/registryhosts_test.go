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
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/core/images"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"tug/internal/api"
	"tug/internal/events"
	"tug/internal/pod"
	"tug/internal/podview"
	"tug/internal/source"
	"tug/internal/testutil"
)

// Registry hosts as containerd reads them (--registry-config-dir, a
// certs.d directory of hosts.toml files) and the node's download cap
// (--image-pull-bandwidth), against real docker-registry processes.

// writeHostsToml writes the hosts.toml of registry host (HOST:PORT) into
// the certs.d directory root, in the directory containerd's layout names
// HOST_PORT_.
func writeHostsToml(t *testing.T, root, host, content string) {
	t.Helper()
	dir := filepath.Join(root, strings.Replace(host, ":", "_", 1)+"_")
	must(t, os.MkdirAll(dir, 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "hosts.toml"), []byte(content), 0o644))
}

// waitPulled waits for the Pulled event of a completed pull of the pod
// named name, and returns it.
func (tg *tug) waitPulled(name string) events.Event {
	tg.t.Helper()
	var pulled events.Event
	tg.waitFor(startTimeout, "the Pulled event of pod "+name, func() (bool, error) {
		ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
		defer cancel()
		evs, err := tg.api().Events(ctx, api.EventQuery{UID: tg.uid(name)})
		for _, e := range evs {
			if e.Reason == "Pulled" && strings.HasPrefix(e.Message, "Successfully pulled image") {
				pulled = e
				return true, nil
			}
		}
		return false, err
	})
	return pulled
}

// TestRegistryMirror: a hosts.toml for the upstream registry names a
// mirror; both docker-registry processes serve the same image, the test
// image with a layer of random bytes (no namespace of the shared
// containerd has it, so a pull fetches it). With the upstream down, the
// image is pulled from the mirror, and the Pulled event and tug's log line
// say so. The pod, the image and its content are removed; with the mirror
// down, the pull falls back to the upstream, which serves every blob
// again, and the event is the kubelet's.
func TestRegistryMirror(t *testing.T) {
	t.Parallel()
	up := startRegistry(t, registryOpts{})
	mirror := startRegistry(t, registryOpts{})
	data := randomBytes(t, 1<<20)
	path, layer := pushImage(t, up, "tug/mirrored", "1", data)
	pushImage(t, mirror, "tug/mirrored", "1", data)
	certs := filepath.Join(t.TempDir(), "certs.d")
	writeHostsToml(t, certs, up.Addr, fmt.Sprintf(`server = "http://%s"

[host."http://%s"]
  capabilities = ["pull", "resolve"]
`, up.Addr, mirror.Addr))
	tg := startTug(t, tugOpts{noImageArchive: true, args: []string{"--registry-config-dir", certs},
		beforeStart: func(tg *tug) { tg.relay(up.Addr); tg.relay(mirror.Addr) }})
	ref := up.Ref(path)

	// Each pod pulls (imagePullPolicy Always) as it starts.
	up.Stop()
	tg.writeManifest("viamirror.yaml", pullPod("viamirror", ref, ""))
	tg.waitRunning(startTimeout, "viamirror", "main", 0)
	if ev := tg.waitPulled("viamirror"); !strings.HasSuffix(ev.Message, " bytes. Pulled from mirror "+mirror.Addr+".") {
		t.Errorf("Pulled event with the upstream down: %q, want it to end %q", ev.Message, "Pulled from mirror "+mirror.Addr+".")
	}
	if line := findLine(tg.output(), "pulled image", ref, "mirror "+mirror.Addr); line == "" {
		t.Errorf("no log line \"pulled image\" of %s naming mirror %s", ref, mirror.Addr)
	} else {
		t.Logf("tug: %s", line)
	}

	// The next pull fetches the layer again: the pod goes (its container
	// holds the layer's snapshot, which spares an unpack the fetch), then
	// the image, and with it (containerd's garbage collection) its content.
	tg.removeManifest("viamirror.yaml")
	tg.waitGone(startTimeout, tg.uid("viamirror"), "pod viamirror removed")
	ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
	defer cancel()
	must(t, tg.client.ImageService().Delete(ctx, ref, images.SynchronousDelete()))
	if _, err := tg.client.ContentStore().Info(ctx, layer); !isNotFound(err) {
		t.Fatalf("the layer %s is still in containerd's content store (%v): the next pull would not fetch it", layer, err)
	}
	mirror.Stop()
	up.Start()
	tg.writeManifest("viaupstream.yaml", pullPod("viaupstream", ref, ""))
	tg.waitRunning(startTimeout, "viaupstream", "main", 0)
	if ev := tg.waitPulled("viaupstream"); !strings.HasSuffix(ev.Message, " bytes.") || strings.Contains(ev.Message, "Pulled from") {
		t.Errorf("Pulled event with the mirror down: %q, want the kubelet's, naming no mirror", ev.Message)
	}
	if line := findLine(tg.output(), "pulled image", ref, "registry="+up.Addr); line == "" {
		t.Errorf("no log line \"pulled image\" of %s naming the upstream %s", ref, up.Addr)
	} else {
		t.Logf("tug: %s", line)
	}
	ctx, cancel = context.WithTimeout(context.Background(), queryTimeout)
	defer cancel()
	if _, err := tg.client.ContentStore().Info(ctx, layer); err != nil {
		t.Errorf("the layer %s is not in containerd's content store after the pull from the upstream: %v", layer, err)
	}
}

// TestOCISourceMirror: the bundle of an OCI source comes through the
// registry hosts of --registry-config-dir as images do. The upstream's
// storage is copied to the mirror named in its hosts.toml; with the
// upstream down at boot, the bundle is pulled from the mirror (and tug
// says so); with the mirror down and the upstream back, a new digest is
// pulled from the upstream.
func TestOCISourceMirror(t *testing.T) {
	t.Parallel()
	image, _ := testutil.TestImage(t)
	up := startRegistry(t, registryOpts{})
	mirror := startRegistry(t, registryOpts{})
	dir := t.TempDir()
	ref := up.Ref("tug/bundle:site")
	name := source.OCIPrefix + ref
	uid := pod.UID(name, "default", staticName("mirrored"))
	bundlePush(t, "--unsigned", writeFile(t, dir, "v1.yaml", shPod("mirrored", image, "echo v1; "+idle)), ref)
	if out, err := exec.Command("cp", "-a", up.Dir+"/.", mirror.Dir).CombinedOutput(); err != nil {
		t.Fatalf("copy the upstream's storage to the mirror: %v\n%s", err, out)
	}
	certs := filepath.Join(dir, "certs.d")
	writeHostsToml(t, certs, up.Addr, fmt.Sprintf(`server = "http://%s"

[host."http://%s"]
  capabilities = ["pull", "resolve"]
`, up.Addr, mirror.Addr))

	up.Stop()
	tg := startTug(t, tugOpts{
		args:        []string{"--manifest-oci", ref, "--oci-check-frequency", ociCheck.String(), "--registry-config-dir", certs},
		beforeStart: func(tg *tug) { tg.relay(up.Addr); tg.relay(mirror.Addr) },
	})
	tg.waitRunningUID(startTimeout, uid, "main", 0)
	if line := tg.waitForOutput(startTimeout, "bundle registry answers from a mirror", "host="+mirror.Addr); line != "" {
		t.Logf("tug: %s", findLine(tg.output(), "bundle registry answers from a mirror"))
	}

	mirror.Stop()
	up.Start()
	d2 := bundlePush(t, "--unsigned", writeFile(t, dir, "v2.yaml", shPod("mirrored", image, "echo v2; "+idle)), ref)
	tg.waitURLManifest(ociApplyTimeout+startTimeout, name, "v2 pulled from the upstream, the mirror down", func(m *podview.ManifestStatus) error {
		if m.Fetch == nil || m.Fetch.Digest != d2 || manifestError(m) != "" {
			return fmt.Errorf("not %s", d2)
		}
		return nil
	})
	tg.waitRunningUID(startTimeout, uid, "main", 1)
}

// TestImagePullBandwidth: with --image-pull-bandwidth 1Mi, two pods pull
// at once two images with a 4 MiB layer of random bytes each (no namespace
// of the shared containerd has them). Together they are downloaded at
// 1 MiB/s within 10%, as a counting proxy in front of the registry
// measures it: the rate of the middle half of the bytes, once the
// sockets' buffers are full. The proxy is tug's relay to the registry, in
// tug's network namespace, with a small send buffer, so that what it has
// passed on is what tug has nearly read. Each pull takes about the 8 s of
// both layers, not the 4 s of its own: the pulls share the node's cap.
func TestImagePullBandwidth(t *testing.T) {
	t.Parallel()
	const (
		capFlag = "1Mi"
		rate    = 1 << 20
		size    = 4 << 20 // each layer's
	)
	reg := startRegistry(t, registryOpts{})
	pathA, _ := pushImage(t, reg, "tug/random-a", "1", randomBytes(t, size))
	pathB, _ := pushImage(t, reg, "tug/random-b", "1", randomBytes(t, size))
	refs := []string{reg.Ref(pathA), reg.Ref(pathB)}
	var proxy *countingProxy
	tg := startTug(t, tugOpts{noImageArchive: true, args: []string{"--image-pull-bandwidth", capFlag},
		beforeStart: func(tg *tug) { proxy = startCountingProxy(t, tg.netns, reg.Addr) }})
	tg.writeManifest("capped.yaml", pullPod("capped-a", refs[0], "")+"---\n"+pullPod("capped-b", refs[1], ""))
	tookRE := regexp.MustCompile(`^Successfully pulled image "[^"]+" in ([^ ]+) \(`)
	for _, name := range []string{"capped-a", "capped-b"} {
		tg.waitRunning(startTimeout, name, "main", 0)
		msg := tg.waitPulled(name).Message
		t.Logf("%s: %s", name, msg)
		m := tookRE.FindStringSubmatch(msg)
		if m == nil {
			t.Fatalf("Pulled event %q: no duration", msg)
		}
		took, err := time.ParseDuration(m[1])
		must(t, err)
		// Alone at the cap, a pull takes 4 s; sharing it, about 8 s.
		if took < 6*time.Second {
			t.Errorf("the pull of %s took %s: the two pulls did not share the cap", name, took)
		}
	}

	total, got := proxy.rate(0.25, 0.75)
	t.Logf("registry sent %d bytes; %.0f bytes/s over the middle half (cap %d)", total, got, rate)
	if total < 2*size {
		t.Fatalf("the registry sent %d bytes, fewer than the %d of the layers: they were not pulled through the proxy", total, 2*size)
	}
	if got < rate*0.9 || got > rate*1.1 {
		t.Errorf("download rate %.0f bytes/s, want %d ±10%%", got, rate)
	}
}

// randomBytes returns n random bytes.
func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	_, err := rand.Read(b)
	must(t, err)
	return b
}

// pushImage pushes to reg, as repo:tag, the test image with one more
// layer: the file random.bin holding data (an uncompressed tar, so that
// nothing compresses it on the way; the same data gives the same image).
// It returns "repo:tag" and the layer's digest.
func pushImage(t *testing.T, reg *testRegistry, repo, tag string, data []byte) (string, digest.Digest) {
	t.Helper()
	get, _, srcTag := testImageGetter(t)
	var m ocispec.Manifest
	must(t, json.Unmarshal(get("/manifests/"+srcTag, ocispec.MediaTypeImageManifest), &m))
	var config ocispec.Image
	must(t, json.Unmarshal(get("/blobs/"+m.Config.Digest.String(), "*/*"), &config))

	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	must(t, tw.WriteHeader(&tar.Header{Name: "random.bin", Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}))
	_, err := tw.Write(data)
	must(t, err)
	must(t, tw.Close())

	put := func(method, u, contentType string, body []byte, want int) *http.Response {
		req, err := http.NewRequest(method, u, bytes.NewReader(body))
		must(t, err)
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		defer resp.Body.Close()
		if resp.StatusCode != want {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("%s %s: %s %s", method, u, resp.Status, b)
		}
		return resp
	}
	base := "http://" + reg.Addr + "/v2/" + repo
	pushBlob := func(b []byte) digest.Digest {
		d := digest.FromBytes(b)
		resp := put(http.MethodPost, base+"/blobs/uploads/", "", nil, http.StatusAccepted)
		loc, err := resp.Location()
		must(t, err)
		q := loc.Query()
		q.Set("digest", d.String())
		loc.RawQuery = q.Encode()
		put(http.MethodPut, loc.String(), "application/octet-stream", b, http.StatusCreated)
		return d
	}
	for _, l := range m.Layers {
		pushBlob(get("/blobs/"+l.Digest.String(), "*/*"))
	}
	layerDigest := pushBlob(layer.Bytes())
	m.Layers = append(m.Layers, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayer, Digest: layerDigest, Size: int64(layer.Len())})
	config.RootFS.DiffIDs = append(config.RootFS.DiffIDs, layerDigest) // uncompressed: the diff ID is the blob's
	configBlob, err := json.Marshal(config)
	must(t, err)
	m.Config = ocispec.Descriptor{MediaType: ocispec.MediaTypeImageConfig, Digest: pushBlob(configBlob), Size: int64(len(configBlob))}
	m.MediaType = ocispec.MediaTypeImageManifest
	manifest, err := json.Marshal(m)
	must(t, err)
	put(http.MethodPut, base+"/manifests/"+url.PathEscape(tag), ocispec.MediaTypeImageManifest, manifest, http.StatusCreated)
	return repo + ":" + tag, layerDigest
}

// countingProxy is a relay, as tug.relay, in front of a registry that
// records when each byte the registry sends is passed on.
type countingProxy struct {
	mu      sync.Mutex
	samples []sentSample // in time order
	total   int64
}

type sentSample struct {
	at    time.Time
	total int64 // bytes sent by the registry, all connections, until at
}

// startCountingProxy listens on target's address in the network
// namespace netns and relays to target; its connections into netns have
// a send buffer of 16 KiB (twice that as the kernel counts it).
func startCountingProxy(t *testing.T, netns, target string) *countingProxy {
	t.Helper()
	l := listenIn(t, netns, "tcp", target)
	p := &countingProxy{}
	var wg sync.WaitGroup
	var conns sync.Map
	t.Cleanup(func() {
		l.Close()
		conns.Range(func(c, _ any) bool { c.(net.Conn).Close(); return true })
		wg.Wait()
	})
	wg.Go(func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := net.DialTimeout("tcp", target, 5*time.Second)
			if err != nil {
				in.Close()
				continue
			}
			if err := in.(*net.TCPConn).SetWriteBuffer(16 << 10); err != nil {
				t.Errorf("proxy: set the send buffer: %v", err)
				in.Close()
				out.Close()
				continue
			}
			conns.Store(in, true)
			conns.Store(out, true)
			wg.Go(func() {
				io.Copy(out, in)
				out.(*net.TCPConn).CloseWrite()
			})
			wg.Go(func() {
				buf := make([]byte, 32<<10)
				for {
					n, err := out.Read(buf)
					if n > 0 {
						if _, werr := in.Write(buf[:n]); werr != nil {
							break
						}
						p.sent(n)
					}
					if err != nil {
						break
					}
				}
				in.Close()
				out.Close()
			})
		}
	})
	return p
}

func (p *countingProxy) sent(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total += int64(n)
	p.samples = append(p.samples, sentSample{at: time.Now(), total: p.total})
}

// rate returns the bytes the registry sent in all, and the rate (bytes
// per second) at which the part of them between the fractions from and to
// of the total was passed on.
func (p *countingProxy) rate(from, to float64) (int64, float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	at := func(f float64) sentSample {
		for _, s := range p.samples {
			if float64(s.total) >= f*float64(p.total) {
				return s
			}
		}
		return sentSample{}
	}
	a, b := at(from), at(to)
	secs := b.at.Sub(a.at).Seconds()
	if secs <= 0 {
		return p.total, 0
	}
	return p.total, float64(b.total-a.total) / secs
}
