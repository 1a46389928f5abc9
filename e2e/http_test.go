//go:build e2e

package e2e

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"

	"tug/internal/pod"
	"tug/internal/podview"
	"tug/internal/testutil"
)

// httpCheck is --http-check-frequency in these tests.
const httpCheck = 300 * time.Millisecond

// fetchTimeout is a bound for tug to notice what the server answered: a few
// polls, or the 10 s request timeout and a few polls.
const fetchTimeout = 20 * time.Second

// answer is what manifestServer answers for the manifest URL.
type answer struct {
	status int    // 0: 200
	body   []byte // sent as is, with its length
	// etag, when set, is sent with the body; a request whose If-None-Match
	// is etag gets 304 Not Modified without a body.
	etag   string
	header http.Header // more response headers
	// hang blocks every request until it ends (tug's timeout) or the answer
	// is replaced (then 503).
	hang bool
}

// manifestServer is a real HTTP server on 127.0.0.1 whose answer the test
// switches, and which counts what it sent.
type manifestServer struct {
	srv *httptest.Server
	url string // of the manifest

	mu          sync.Mutex
	a           answer
	release     chan struct{} // closed when a is replaced
	full        int           // 200 responses with a body for the manifest
	notModified int           // 304 responses
}

func newManifestServer(t *testing.T, a answer) *manifestServer {
	s := &manifestServer{a: a, release: make(chan struct{})}
	s.srv = httptest.NewServer(s)
	s.url = s.srv.URL + "/pods.yaml"
	t.Cleanup(s.Close)
	return s
}

// Close stops the server: nothing answers at its address any more.
func (s *manifestServer) Close() {
	s.set(answer{status: http.StatusServiceUnavailable}) // release hanging requests
	s.srv.Close()
}

// set replaces the answer.
func (s *manifestServer) set(a answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.a = a
	close(s.release)
	s.release = make(chan struct{})
}

// counts returns how many full (200) and 304 responses were sent.
func (s *manifestServer) counts() (full, notModified int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.full, s.notModified
}

func (s *manifestServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	a, release := s.a, s.release
	if a.hang {
		s.mu.Unlock()
		select {
		case <-r.Context().Done():
		case <-release:
			http.Error(w, "released", http.StatusServiceUnavailable)
		}
		return
	}
	if a.etag != "" && r.Header.Get("If-None-Match") == a.etag {
		s.notModified++
		s.mu.Unlock()
		w.Header().Set("ETag", a.etag)
		w.WriteHeader(http.StatusNotModified)
		return
	}
	status := a.status
	if status == 0 {
		status = http.StatusOK
	}
	if status == http.StatusOK {
		s.full++
	}
	s.mu.Unlock()
	for k, vs := range a.header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if a.etag != "" {
		w.Header().Set("ETag", a.etag)
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(a.body)))
	w.WriteHeader(status)
	_, _ = w.Write(a.body)
}

// good returns an answer serving body with an ETag derived from it.
func good(body string) answer {
	sum := sha256.Sum256([]byte(body))
	return answer{body: []byte(body), etag: fmt.Sprintf(`"%x"`, sum[:8])}
}

// signedAnswer returns good's answer for the bundle of body signed by
// "tug sign --key key more...".
func signedAnswer(t *testing.T, key, body string, more ...string) answer {
	t.Helper()
	return good(string(tugSign(t, key, body, more...)))
}

// twoPods is a multi-document body: pod urla with containers a and b (b's
// script given), pod urlb with container main.
func twoPods(image, bScript string) string {
	return podYAML{name: "urla", containers: []ctrYAML{
		{name: "a", image: image, script: "echo a; " + idle, asArgs: true},
		{name: "b", image: image, script: bScript, asArgs: true},
	}}.String() + "---\n" + shPod("urlb", image, idle)
}

// urlUID is the UID of the pod named name (in its manifest) of the URL
// source url.
func urlUID(url, name string) string { return pod.UID(url, "default", staticName(name)) }

// urlTug starts tug polling url every httpCheck, with more flags.
// The URL's server, on the test's loopback, is relayed into the node.
func urlTug(t *testing.T, rawURL string, more ...string) *tug {
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return startTug(t, tugOpts{
		args:        append([]string{"--manifest-url", rawURL, "--http-check-frequency", httpCheck.String()}, more...),
		beforeStart: func(tg *tug) { tg.relay(u.Host) },
	})
}

// tasksOf returns the containers of the pods uids, by ID, each running its
// first attempt (for sameTasks).
func (tg *tug) tasksOf(uids ...string) map[string]ctr {
	tg.t.Helper()
	want := map[string]ctr{}
	for _, uid := range uids {
		cs, err := tg.podContainers(uid)
		if err != nil {
			tg.t.Fatal(err)
		}
		for _, c := range cs {
			if c.Status != containerd.Running {
				tg.t.Fatalf("pod %s: %v, want a running task", uid, c)
			}
			want[c.ID] = c
		}
	}
	return want
}

// urlManifest returns the /manifests item of the URL source url.
func (tg *tug) urlManifest(url string) (podview.ManifestStatus, error) {
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	items, err := tg.api().Manifests(ctx)
	if err != nil {
		return podview.ManifestStatus{}, err
	}
	var sources []string
	for _, m := range items {
		if m.Source == url {
			return m, nil
		}
		sources = append(sources, m.Source+" "+m.File)
	}
	return podview.ManifestStatus{}, fmt.Errorf("GET /manifests has no item of source %s: %q", url, sources)
}

// waitURLManifest waits until the /manifests item of url passes check
// (nil: as wanted) and returns it.
func (tg *tug) waitURLManifest(timeout time.Duration, url, what string, check func(m *podview.ManifestStatus) error) podview.ManifestStatus {
	tg.t.Helper()
	var m podview.ManifestStatus
	tg.waitFor(timeout, "/manifests: "+what, func() (bool, error) {
		var err error
		if m, err = tg.urlManifest(url); err != nil {
			return false, err
		}
		if err := check(&m); err != nil {
			return false, fmt.Errorf("%w (item %s)", err, describeManifest(&m))
		}
		return true, nil
	})
	return m
}

func describeManifest(m *podview.ManifestStatus) string {
	s := fmt.Sprintf("source %q file %q error %q uids %v", m.Source, m.File, m.Error, m.UIDs)
	if f := m.Fetch; f != nil {
		s += fmt.Sprintf(" fetch{last %s status %d error %q etag %q full %d 304 %d checkpoint %s fromCheckpoint %v}",
			f.LastFetch.Format(time.RFC3339Nano), f.HTTPStatus, f.Error, f.ETag, f.FullResponses, f.NotModified,
			f.CheckpointTime.Format(time.RFC3339), f.FromCheckpoint)
	}
	return s
}

// manifestError is the error /manifests shows for a URL source: of the
// content or of the last fetch.
func manifestError(m *podview.ManifestStatus) string {
	var errs []string
	if m.Error != "" {
		errs = append(errs, m.Error)
	}
	if m.Fetch != nil && m.Fetch.Error != "" {
		errs = append(errs, m.Fetch.Error)
	}
	return strings.Join(errs, "; ")
}

// healthyFetch checks that the item shows content accepted with etag and
// no error.
func healthyFetch(etag string) func(m *podview.ManifestStatus) error {
	return func(m *podview.ManifestStatus) error {
		switch {
		case m.Fetch == nil:
			return fmt.Errorf("no fetch status")
		case manifestError(m) != "":
			return fmt.Errorf("error %q", manifestError(m))
		case strings.Trim(m.Fetch.ETag, `"`) != strings.Trim(etag, `"`):
			return fmt.Errorf("etag %q, want %q", m.Fetch.ETag, etag)
		}
		return nil
	}
}

func TestHTTPSourcePods(t *testing.T) {
	t.Parallel()
	image, _ := testutil.TestImage(t)
	v1 := good(twoPods(image, "echo b-v1; "+idle))
	srv := newManifestServer(t, v1)
	tg := urlTug(t, srv.url)
	uidA, uidB := urlUID(srv.url, "urla"), urlUID(srv.url, "urlb")
	a0 := tg.waitRunningUID(startTimeout, uidA, "a", 0)
	b0 := tg.waitRunningUID(startTimeout, uidA, "b", 0)
	m0 := tg.waitRunningUID(startTimeout, uidB, "main", 0)
	tg.waitAllRunning(logTimeout, []string{"urla", "urlb"})

	// Change b's args only: b is recreated, a and the other pod stay.
	v2 := good(twoPods(image, "echo b-v2; "+idle))
	srv.set(v2)
	b1 := tg.waitRunningUID(removeTimeout, uidA, "b", 1)
	if b1.ID == b0.ID || b1.PID == b0.PID {
		t.Errorf("b was not recreated: before %v, after %v", b0, b1)
	}
	for _, want := range []ctr{a0, m0} {
		c, ok, err := tg.container(want.UID(), want.Name())
		if err != nil || !ok {
			t.Fatalf("container %s: found %v, %v", want.Name(), ok, err)
		}
		if c.ID != want.ID || c.PID != want.PID || c.Status != containerd.Running {
			t.Errorf("container %s changed with b's args: before %v, after %v", want.Name(), want, c)
		}
	}

	// Unchanged content: 304s, no more full responses.
	m := tg.waitURLManifest(fetchTimeout, srv.url, "v2 accepted, no error", healthyFetch(v2.etag))
	full0, nm0 := srv.counts()
	fetch0 := *m.Fetch
	time.Sleep(8 * httpCheck)
	full1, nm1 := srv.counts()
	if full1 != full0 {
		t.Errorf("unchanged content: the server sent %d more full responses, want none (conditional requests)", full1-full0)
	}
	if nm1-nm0 < 3 {
		t.Errorf("the server sent %d 304s in %v, want at least 3", nm1-nm0, 8*httpCheck)
	}
	m, err := tg.urlManifest(srv.url)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("/manifests: %s", describeManifest(&m))
	switch {
	case m.File != srv.url:
		t.Errorf("/manifests: file %q, want the URL %q", m.File, srv.url)
	case m.Fetch == nil:
		t.Fatalf("/manifests: no fetch status")
	case manifestError(&m) != "":
		t.Errorf("/manifests: error %q", manifestError(&m))
	}
	if strings.Trim(m.Fetch.ETag, `"`) != strings.Trim(v2.etag, `"`) {
		t.Errorf("/manifests: etag %q, want %q", m.Fetch.ETag, v2.etag)
	}
	if m.Fetch.FullResponses != fetch0.FullResponses {
		t.Errorf("/manifests: fullResponses went from %d to %d on 304s", fetch0.FullResponses, m.Fetch.FullResponses)
	}
	if m.Fetch.NotModified <= fetch0.NotModified {
		t.Errorf("/manifests: notModified went from %d to %d, want more", fetch0.NotModified, m.Fetch.NotModified)
	}
	if m.AppliedHash != "" && m.Hash != "" && m.AppliedHash != m.Hash {
		t.Errorf("/manifests: applied hash %q is not the content's %q", m.AppliedHash, m.Hash)
	}
	for _, uid := range []string{uidA, uidB} {
		if !slices.Contains(m.UIDs, uid) {
			t.Errorf("/manifests: uids %v lack %s", m.UIDs, uid)
		}
	}
}

func TestHTTPSourceBadAnswers(t *testing.T) {
	t.Parallel()
	image, _ := testutil.TestImage(t)
	keys, wrongKeys := t.TempDir(), t.TempDir()
	_, pubPath := keyPair(t, keys, "good")
	keyPair(t, wrongKeys, "wrong")
	key, wrongKey := filepath.Join(keys, "good.pem"), filepath.Join(wrongKeys, "wrong.pem")
	body := shPod("bad", image, idle)
	ok := signedAnswer(t, key, body, "--version", "1")
	srv := newManifestServer(t, ok)
	tg := urlTug(t, srv.url, "--manifest-verify-key", pubPath)
	uid := urlUID(srv.url, "bad")
	tg.waitRunningUID(startTimeout, uid, "main", 0)
	tg.waitURLManifest(fetchTimeout, srv.url, "the good content accepted", healthyFetch(ok.etag))
	want := tg.tasksOf(uid)

	signed := func(b []byte) answer { return answer{body: sealUnchecked(t, key, string(b), 2)} }
	changed := []byte(shPod("bad", image, "echo changed; "+idle))
	truncated := []byte(body[:strings.Index(body, `"trap`)+6]) // inside a quoted scalar
	huge := []byte(body + "\n#" + strings.Repeat("x", 20<<20) + "\n")
	html := []byte("<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head>\n<body><h1>Bad Gateway</h1><p>nginx</p></body></html>\n")
	htmlAnswer := signed(html)
	htmlAnswer.header = http.Header{"Content-Type": {"text/html; charset=utf-8"}}
	cases := []struct {
		name string
		a    answer
		// words: the error names the problem with one of them
		words []string
	}{
		{"500", answer{status: 500, body: []byte("internal error\n")}, []string{"500"}},
		{"truncated YAML", signed(truncated), []string{"yaml", "parse", "line", "unexpected", "eof", "found", "decode"}},
		{"20 MiB body", signed(huge), []string{"limit", "large", "mib", "size", "exceed", "10485760", "bytes"}},
		{"HTML error page", htmlAnswer, []string{"html", "yaml", "parse", "unmarshal", "content-type", "cannot", "kind", "decode"}},
		{"wrong signature", answer{body: tugSign(t, wrongKey, string(changed), "--version", "2")}, []string{"signature"}},
		{"hang past the timeout", answer{hang: true}, []string{"timeout", "deadline", "timed out", "canceled"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tg := tg.forTest(t)
			srv.set(c.a)
			m := tg.waitURLManifest(fetchTimeout, srv.url, "an error after a bad answer", func(m *podview.ManifestStatus) error {
				if manifestError(m) == "" {
					return fmt.Errorf("no error")
				}
				return nil
			})
			msg := manifestError(&m)
			t.Logf("error shown: %s", msg)
			if !slices.ContainsFunc(c.words, func(w string) bool { return strings.Contains(strings.ToLower(msg), w) }) {
				t.Errorf("the error %q names none of %q", msg, c.words)
			}
			time.Sleep(4 * httpCheck) // a few more bad answers: still no churn
			if err := tg.sameTasks(want); err != nil {
				t.Errorf("after the bad answer: %v", err)
			}
			srv.set(ok)
			tg.waitURLManifest(fetchTimeout, srv.url, "the error to clear once the answer is good again", healthyFetch(ok.etag))
			if err := tg.sameTasks(want); err != nil {
				t.Errorf("after the good answer: %v", err)
			}
		})
	}
}

// checkpointedURLTug starts tug on a manifest server serving twoPods and
// waits until the pods' containers run and the URL source has written its
// checkpoint.
func checkpointedURLTug(t *testing.T) (srv *manifestServer, tg *tug, uidA, uidB string) {
	t.Helper()
	image, _ := testutil.TestImage(t)
	srv = newManifestServer(t, good(twoPods(image, idle)))
	tg = urlTug(t, srv.url)
	uidA, uidB = urlUID(srv.url, "urla"), urlUID(srv.url, "urlb")
	tg.waitRunningUID(startTimeout, uidA, "a", 0)
	tg.waitRunningUID(startTimeout, uidA, "b", 0)
	tg.waitRunningUID(startTimeout, uidB, "main", 0)
	tg.waitURLManifest(fetchTimeout, srv.url, "a checkpoint", func(m *podview.ManifestStatus) error {
		if m.Fetch == nil || m.Fetch.CheckpointTime.IsZero() {
			return fmt.Errorf("no checkpoint time")
		}
		return nil
	})
	return srv, tg, uidA, uidB
}

func TestHTTPSourceOffline(t *testing.T) {
	t.Parallel()
	srv, tg, uidA, uidB := checkpointedURLTug(t)
	tg.waitAllRunning(logTimeout, []string{"urla", "urlb"})
	want := tg.tasksOf(uidA, uidB)

	srv.Close()
	tg.waitURLManifest(fetchTimeout, srv.url, "a fetch error with the server down", func(m *podview.ManifestStatus) error {
		if m.Fetch == nil || m.Fetch.Error == "" {
			return fmt.Errorf("no fetch error")
		}
		return nil
	})
	time.Sleep(4 * httpCheck)
	if err := tg.sameTasks(want); err != nil {
		t.Fatalf("server down: %v", err)
	}

	if err := tg.Stop(); err != nil {
		t.Fatalf("stop tug: %v", err)
	}
	tg.Start()
	m := tg.waitURLManifest(startTimeout, srv.url, "the pods from the checkpoint", func(m *podview.ManifestStatus) error {
		if m.Fetch == nil || !m.Fetch.FromCheckpoint {
			return fmt.Errorf("not from the checkpoint")
		}
		return nil
	})
	t.Logf("/manifests after the restart: %s", describeManifest(&m))
	tg.waitAllRunning(startTimeout, []string{"urla", "urlb"})
	time.Sleep(syncFrequency + time.Second) // past a sync: nothing is taken for an orphan
	if err := tg.sameTasks(want); err != nil {
		t.Fatalf("tug restarted with the server down: %v", err)
	}
}

func TestHTTPSourceReboot(t *testing.T) {
	t.Parallel()
	srv, tg, uidA, uidB := checkpointedURLTug(t)
	before := tg.tasksOf(uidA, uidB)

	// The reboot: tug stops, every container and task goes, /run is empty,
	// and the server is unreachable when tug comes up again.
	if err := tg.Stop(); err != nil {
		t.Fatalf("stop tug: %v", err)
	}
	srv.Close()
	tg.removeAllContainers()
	if err := unmountUnder(tg.runDir); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(tg.runDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(tg.runDir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	if cs, err := tg.containers(); err != nil || len(cs) != 0 {
		t.Fatalf("after the simulated reboot: containers %v, %v", cs, err)
	}

	booted := time.Now()
	tg.Start()
	for _, c := range []struct{ uid, name string }{{uidA, "a"}, {uidA, "b"}, {uidB, "main"}} {
		got := tg.waitRunningUID(startTimeout, c.uid, c.name, 0)
		// Container IDs are derived from the pod and attempt, so the new
		// container may reuse the old ID: its creation time and PID differ.
		if old, ok := before[got.ID]; ok && (got.PID == old.PID || !got.CreatedAt.After(booted)) {
			t.Errorf("container %v is not new after the reboot (was %v created %v)", got, old, old.CreatedAt)
		}
	}
	m, err := tg.urlManifest(srv.url)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("/manifests after the reboot: %s", describeManifest(&m))
	if m.Fetch == nil || !m.Fetch.FromCheckpoint {
		t.Errorf("/manifests does not say the pods come from the checkpoint: %s", describeManifest(&m))
	}
}

// removeAllContainers kills every task and deletes every container with its
// snapshot in the test's namespace (images stay, as after a reboot).
func (tg *tug) removeAllContainers() {
	tg.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if err := testutil.RemoveContainers(ctx, tg.client); err != nil {
		tg.t.Fatal(err)
	}
}

func TestFileSourceIndependentOfURL(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String() + "/pods.yaml"
	l.Close() // nothing answers there
	tg := urlTug(t, url)
	start := time.Now()
	tg.writeManifest("local.yaml", shPod("local", tg.image, idle))
	tg.waitRunning(startTimeout, "local", "main", 0)
	t.Logf("the file's pod runs %v after its manifest was written", time.Since(start).Round(time.Millisecond))
	left := tg.podLeftovers("local")

	if err := os.Remove(tg.manifestPath("local.yaml")); err != nil {
		t.Fatal(err)
	}
	tg.waitFor(removeTimeout, "the file's pod to be removed", func() (bool, error) {
		if l := left(); len(l) > 0 {
			return false, fmt.Errorf("left: %v", l)
		}
		return true, nil
	})
	// The URL's state is visible too: it never
	// answered, and /manifests says so.
	tg.waitURLManifest(3*time.Second, url, "the fetch error of the URL that never answered", func(m *podview.ManifestStatus) error {
		if m.Fetch == nil || m.Fetch.Error == "" || m.Fetch.FullResponses != 0 {
			return fmt.Errorf("no fetch error")
		}
		return nil
	})
}

func TestSignedManifests(t *testing.T) {
	t.Parallel()
	image, _ := testutil.TestImage(t)
	dir := t.TempDir()
	_, pubPath := keyPair(t, dir, "k")
	keyPath := filepath.Join(dir, "k.pem")
	keyPair(t, dir, "other")
	otherPath := filepath.Join(dir, "other.pem")

	v1 := shPod("signed", image, "echo v1; "+idle)
	a1 := signedAnswer(t, keyPath, v1, "--version", "1")
	if !strings.HasPrefix(string(a1.body), "tug-envelope-v1\n") || !strings.HasSuffix(string(a1.body), v1) {
		t.Fatalf("tug sign wrote no bundle of the file:\n%s", a1.body)
	}
	srv := newManifestServer(t, a1)
	tg := urlTug(t, srv.url, "--manifest-verify-key", pubPath)
	uid := urlUID(srv.url, "signed")
	tg.waitRunningUID(startTimeout, uid, "main", 0)
	tg.waitURLManifest(fetchTimeout, srv.url, "the signed content accepted", healthyFetch(a1.etag))
	want := tg.tasksOf(uid)

	v2 := shPod("signed", image, "echo v2; "+idle)
	swapped := answer{body: append(a1.body[:len(a1.body)-len(v1):len(a1.body)-len(v1)], v2...)}
	for _, c := range []struct {
		name string
		a    answer
	}{
		{"unsigned", good(v2)},
		{"signed by another key", signedAnswer(t, otherPath, v2, "--version", "2")},
		{"signature of other content", swapped},
	} {
		t.Run(c.name, func(t *testing.T) {
			tg := tg.forTest(t)
			srv.set(c.a)
			m := tg.waitURLManifest(fetchTimeout, srv.url, "the content rejected", func(m *podview.ManifestStatus) error {
				if manifestError(m) == "" {
					return fmt.Errorf("no error")
				}
				return nil
			})
			msg := manifestError(&m)
			t.Logf("error shown: %s", msg)
			if !strings.Contains(strings.ToLower(msg), "sign") {
				t.Errorf("the error %q does not name the signature", msg)
			}
			time.Sleep(4 * httpCheck)
			if err := tg.sameTasks(want); err != nil {
				t.Errorf("%s content changed the pod: %v", c.name, err)
			}
		})
	}

	// Signed properly, the new content is accepted.
	a2 := signedAnswer(t, keyPath, v2, "--version", "2")
	srv.set(a2)
	tg.waitRunningUID(removeTimeout, uid, "main", 1)
	tg.waitURLManifest(fetchTimeout, srv.url, "the signed v2 accepted", healthyFetch(a2.etag))
}

// keyPair writes an ed25519 key pair as openssl writes them: <name>.pem
// (PKCS8 private key) and <name>.pub.pem (PKIX public key) in dir. It
// returns the private key and the public key's path.
func keyPair(t *testing.T, dir, name string) (ed25519.PrivateKey, string) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p8, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	pk, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	pubPath := filepath.Join(dir, name+".pub.pem")
	if err := os.WriteFile(filepath.Join(dir, name+".pem"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p8}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pubPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pk}), 0o644); err != nil {
		t.Fatal(err)
	}
	return priv, pubPath
}
