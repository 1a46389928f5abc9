package source

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ed25519"
	"encoding/pem"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tug/internal/bundle"
	"tug/internal/pod"
	"tug/internal/wave"
)

// manifestServer serves a settable body with an ETag, counting full
// responses.
type manifestServer struct {
	mu       sync.Mutex
	body     []byte
	status   int           // 0: 200 (or 304)
	delay    time.Duration // before answering
	gzip     bool
	etag     string
	noETag   bool
	gotHdr   http.Header
	full     atomic.Int64
	requests atomic.Int64
}

func (s *manifestServer) set(f func(s *manifestServer)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

func (s *manifestServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	body, status, delay, gz, etag := s.body, s.status, s.delay, s.gzip, s.etag
	s.gotHdr = r.Header.Clone()
	s.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	s.requests.Add(1)
	if status != 0 {
		http.Error(w, "<html><body>oops</body></html>", status)
		return
	}
	if etag == "" && !s.noETag {
		etag = `"` + sha256Hex(body)[:16] + `"`
	}
	if etag != "" {
		w.Header().Set("ETag", etag)
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	s.full.Add(1)
	if gz {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write(body)
		zw.Close()
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(b.Bytes())
		return
	}
	w.Write(body)
}

type httpFixture struct {
	t    *testing.T
	srv  *manifestServer
	ts   *httptest.Server
	h    *HTTP
	sink *fakeSink
	ckpt string
	logs *bytes.Buffer
}

func newHTTPFixture(t *testing.T, body string, tweak ...func(*HTTPConfig)) *httpFixture {
	t.Helper()
	f := &httpFixture{t: t, srv: &manifestServer{body: []byte(body)}, logs: &bytes.Buffer{}}
	f.ts = httptest.NewServer(f.srv)
	t.Cleanup(f.ts.Close)
	f.ckpt = filepath.Join(t.TempDir(), "checkpoints", "x.json")
	f.h = f.newSource(tweak...)
	return f
}

// testutil.SyncBuffer is a bytes.Buffer for the slog handler.
type lockedWriter struct {
	mu sync.Mutex
	b  *bytes.Buffer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (f *httpFixture) newSource(tweak ...func(*HTTPConfig)) *HTTP {
	f.t.Helper()
	cfg := HTTPConfig{
		URL:        f.ts.URL + "/pods.yaml",
		Timeout:    time.Second,
		Checkpoint: f.ckpt,
		Hostname:   "node1",
		Log:        slog.New(slog.NewTextHandler(&lockedWriter{b: f.logs}, nil)),
	}
	for _, tw := range tweak {
		tw(&cfg)
	}
	f.sink = newFakeSink()
	h, err := NewHTTP(cfg, f.sink)
	if err != nil {
		f.t.Fatal(err)
	}
	h.start(context.Background())
	return h
}

func (f *httpFixture) poll() { f.h.poll(context.Background()) }

// lastGood returns the last Set without error.
func (f *httpFixture) lastGood() (pod.SourceFile, bool) {
	h := f.sink.history()
	for i := len(h) - 1; i >= 0; i-- {
		if len(h[i].files) == 1 && h[i].files[0].Err == nil {
			return h[i].files[0], true
		}
	}
	return pod.SourceFile{}, false
}

func (f *httpFixture) sets() int { return len(f.sink.history()) }

func (f *httpFixture) wantPods(images ...string) {
	f.t.Helper()
	m, ok := f.lastGood()
	if !ok {
		f.t.Fatalf("no good Set; history %d", f.sets())
	}
	var got []string
	for _, p := range m.Pods {
		got = append(got, p.Spec.Containers[0].Image)
	}
	if strings.Join(got, ",") != strings.Join(images, ",") {
		f.t.Fatalf("pods %v, want %v", got, images)
	}
	if m.Source != f.h.Name() || m.File != f.h.Name() {
		f.t.Fatalf("origin %+v, want %s", m.Origin, f.h.Name())
	}
}

func TestHTTPAcceptsAndCheckpoints(t *testing.T) {
	f := newHTTPFixture(t, podManifest("web", "nginx:1"))
	if f.sets() != 0 {
		t.Fatal("Set before any fetch without a checkpoint")
	}
	f.poll()
	f.wantPods("nginx:1")
	if p := f.h.acc.pods[0]; p.Metadata.Name != "web-node1" {
		t.Errorf("pod name %q, want web-node1", p.Metadata.Name)
	}
	cp, err := readCheckpoint(f.ckpt)
	if err != nil || string(cp.Body) != podManifest("web", "nginx:1") || cp.URL != f.h.Name() || cp.ETag == "" {
		t.Fatalf("checkpoint %+v, %v", cp, err)
	}
	if fi, err := os.Stat(f.ckpt); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("checkpoint mode: %v %v", fi, err)
	}
	st := f.h.Status()
	if st.HTTPStatus != 200 || st.Error != "" || st.FullResponses != 1 || st.ETag == "" || st.FromCheckpoint || st.CheckpointTime.IsZero() || st.LastSuccess.IsZero() {
		t.Fatalf("status %+v", st)
	}

	// 304: nothing parsed, nothing reported.
	parses, sets := f.h.parses.Load(), f.sets()
	f.poll()
	f.poll()
	if st := f.h.Status(); st.NotModified != 2 || st.HTTPStatus != 304 || f.srv.full.Load() != 1 {
		t.Fatalf("304s: status %+v, full %d", st, f.srv.full.Load())
	}
	// Same bytes without ETag: read, not parsed, not reported.
	f.srv.set(func(s *manifestServer) { s.noETag = true })
	f.poll()
	if f.srv.full.Load() != 2 || f.h.parses.Load() != parses || f.sets() != sets {
		t.Fatalf("unchanged body: full %d parses %d→%d sets %d→%d", f.srv.full.Load(), parses, f.h.parses.Load(), sets, f.sets())
	}
	// A change is reported.
	f.srv.set(func(s *manifestServer) { s.noETag, s.body = false, []byte(podManifest("web", "nginx:2")) })
	f.poll()
	f.wantPods("nginx:2")
	if f.sets() != sets+1 {
		t.Fatalf("sets %d, want %d", f.sets(), sets+1)
	}
}

func TestHTTPFailuresKeepLastGood(t *testing.T) {
	good := podManifest("web", "nginx:1")
	tests := []struct {
		name    string
		set     func(s *manifestServer)
		status  int
		errText string
	}{
		{"500", func(s *manifestServer) { s.status = 500 }, 500, "500 Internal Server Error"},
		{"404", func(s *manifestServer) { s.status = 404 }, 404, "404 Not Found"},
		{"timeout", func(s *manifestServer) { s.delay = 3 * time.Second }, 0, "Client.Timeout"},
		{"truncated yaml", func(s *manifestServer) { s.body = []byte(good[:len(good)-30] + "\n  - name: [") }, 200, "pods.yaml"},
		{"html", func(s *manifestServer) { s.body = []byte("<html><body><h1>502 Bad Gateway</h1></body></html>") }, 200, "pods.yaml"},
		{"garbage", func(s *manifestServer) { s.body = []byte("\x00\x01\xff{{{") }, 200, "pods.yaml"},
		{"too large", func(s *manifestServer) { s.body = bytes.Repeat([]byte("# xxxxxxx\n"), 2<<20) }, 200, "body larger than 10 MiB"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newHTTPFixture(t, good)
			f.poll()
			f.wantPods("nginx:1")
			sets := f.sets()
			f.srv.set(tc.set)
			f.poll()
			f.poll()
			f.poll()
			h := f.sink.history()
			if len(h) != sets+1 {
				t.Fatalf("%d Sets after 3 failing polls, want 1", len(h)-sets)
			}
			m := h[len(h)-1].files[0]
			if m.Err == nil || !strings.Contains(m.Err.Error(), tc.errText) || m.Hash != f.h.acc.hash || m.Pods != nil {
				t.Fatalf("error Set %+v, want error with %q and the accepted hash", m, tc.errText)
			}
			f.wantPods("nginx:1")
			st := f.h.Status()
			if st.HTTPStatus != tc.status || !strings.Contains(st.Error, tc.errText) {
				t.Fatalf("status %+v, want HTTP %d, error with %q", st, tc.status, tc.errText)
			}
			if n := strings.Count(f.logs.String(), "manifest URL failing"); n != 1 {
				t.Errorf("%d failing logs, want 1:\n%s", n, f.logs)
			}
			if _, err := readCheckpoint(f.ckpt); err != nil {
				t.Fatal(err)
			}
			// Back to the good content: the error is cleared, same pods.
			f.srv.set(func(s *manifestServer) { s.status, s.delay, s.body = 0, 0, []byte(good) })
			f.poll()
			h = f.sink.history()
			if last := h[len(h)-1].files[0]; last.Err != nil || len(last.Pods) != 1 || len(h) != sets+2 {
				t.Fatalf("after recovery: %d sets, last %+v", len(h)-sets, last)
			}
			if st := f.h.Status(); st.Error != "" {
				t.Fatalf("status after recovery %+v", st)
			}
			if !strings.Contains(f.logs.String(), "manifest URL ok again") {
				t.Error("no recovery log")
			}
		})
	}
}

func TestHTTPServerGoneAndRestartFromCheckpoint(t *testing.T) {
	f := newHTTPFixture(t, podManifest("web", "nginx:1"))
	f.poll()
	f.wantPods("nginx:1")
	f.ts.Close()
	f.poll()
	h := f.sink.history()
	if m := h[len(h)-1].files[0]; m.Err == nil || len(h) != 2 || !strings.Contains(m.Err.Error(), "dial tcp: connect: connection refused") {
		t.Fatalf("server gone: %d sets, last %+v", len(h), m)
	}
	f.wantPods("nginx:1")

	// Restart with the server down: pods from the checkpoint, before any request.
	f.h = f.newSource()
	h = f.sink.history()
	if len(h) != 1 {
		t.Fatalf("%d Sets at start, want 1 from the checkpoint", len(h))
	}
	f.wantPods("nginx:1")
	st := f.h.Status()
	if !st.FromCheckpoint || st.ETag == "" || st.CheckpointTime.IsZero() {
		t.Fatalf("status %+v", st)
	}
	f.poll()
	if h := f.sink.history(); len(h) != 2 || h[1].files[0].Err == nil || h[1].files[0].Hash != h[0].files[0].Hash {
		t.Fatalf("down after checkpoint: %d sets", len(h))
	}
}

func TestHTTPNoCheckpointServerDownNotReady(t *testing.T) {
	f := newHTTPFixture(t, "")
	f.ts.Close()
	f.poll()
	f.poll()
	if n := f.sets(); n != 0 {
		t.Fatalf("%d Sets with nothing ever fetched, want 0 (not ready)", n)
	}
	if st := f.h.Status(); st.Error == "" || st.HTTPStatus != 0 {
		t.Fatalf("status %+v", st)
	}
}

func TestHTTPBadAnswerWithoutCheckpointNotReady(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	_, other, _ := ed25519.GenerateKey(nil)
	good := podManifest("web", "nginx:1")
	tests := []struct {
		name string
		body []byte
		keys bool
	}{
		{"html", []byte("<!DOCTYPE html><html><body>502</body></html>"), false},
		{"garbage", []byte("\x00\x01\xff{{{"), false},
		{"too large", bytes.Repeat([]byte("# xxxxxxx\n"), 2<<20), false},
		{"unsigned with a key", []byte(good), true},
		{"empty body with a key", nil, true},
		{"wrong key", seal(t, other, 1, good), true},
		{"expired", sealHeader(t, priv, bundle.EnvelopeHeader{Version: 1, NotAfter: time.Now().Add(-time.Hour)}, good), true},
		{"other node", sealHeader(t, priv, bundle.EnvelopeHeader{Version: 1, NotAfter: time.Now().Add(time.Hour), Nodes: []string{"node2"}}, good), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newHTTPFixture(t, "", func(c *HTTPConfig) {
				if tc.keys {
					c.VerifyKeys = []ed25519.PublicKey{pub}
				}
			})
			f.srv.set(func(s *manifestServer) { s.body = tc.body })
			f.poll()
			f.poll()
			if n := f.sets(); n != 0 {
				t.Fatalf("%d Sets after a bad answer with nothing accepted, want 0 (not ready): %+v", n, f.sink.history())
			}
			if st := f.h.Status(); st.Error == "" {
				t.Fatalf("status shows no error: %+v", st)
			}
		})
	}
}

func TestHTTPValidEmptyAnswersAreReady(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	for name, tc := range map[string]struct {
		body []byte
		keys bool
	}{
		"empty List":            {[]byte(`{"apiVersion":"v1","kind":"List","items":[]}`), false},
		"empty body":            {nil, false},
		"empty signed envelope": {seal(t, priv, 1, ""), true},
	} {
		t.Run(name, func(t *testing.T) {
			f := newHTTPFixture(t, "", func(c *HTTPConfig) {
				if tc.keys {
					c.VerifyKeys = []ed25519.PublicKey{pub}
				}
			})
			f.srv.set(func(s *manifestServer) { s.body = tc.body })
			f.poll()
			h := f.sink.history()
			if len(h) != 1 || h[0].files[0].Err != nil || len(h[0].files[0].Pods) != 0 {
				t.Fatalf("history %+v, want one Set with no pods and no error", h)
			}
		})
	}
}

func TestHTTPEmptyBodyIsNoPods(t *testing.T) {
	f := newHTTPFixture(t, podManifest("web", "nginx:1"))
	f.poll()
	f.srv.set(func(s *manifestServer) { s.body = nil })
	f.poll()
	h := f.sink.history()
	if m := h[len(h)-1].files[0]; len(h) != 2 || m.Err != nil || len(m.Pods) != 0 {
		t.Fatalf("empty body: %d sets, last %+v", len(h), m)
	}
}

func TestHTTPCorruptCheckpointIgnored(t *testing.T) {
	f := newHTTPFixture(t, podManifest("web", "nginx:1"))
	f.poll()
	data, err := os.ReadFile(f.ckpt)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(data, []byte(`"sha256":"`)) + 12
	data[i] ^= 1
	if err := os.WriteFile(f.ckpt, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f.ts.Close()
	f.logs.Reset()
	f.h = f.newSource()
	if n := f.sets(); n != 0 {
		t.Fatalf("%d Sets from a corrupt checkpoint", n)
	}
	if !strings.Contains(f.logs.String(), "corrupt checkpoint") || !strings.Contains(f.logs.String(), "WARN") {
		t.Fatalf("no warning: %s", f.logs)
	}
	// Another URL's checkpoint is ignored as well.
	if err := writeCheckpoint(f.ckpt, checkpoint{URL: "http://other/", Body: []byte(podManifest("a", "b"))}); err != nil {
		t.Fatal(err)
	}
	f.h = f.newSource()
	if n := f.sets(); n != 0 {
		t.Fatalf("%d Sets from another URL's checkpoint", n)
	}
}

func TestHTTPGzipAndHeaders(t *testing.T) {
	f := newHTTPFixture(t, podManifest("web", "nginx:1"), func(c *HTTPConfig) {
		c.Header = http.Header{"Authorization": {"Bearer s3cret"}}
	})
	f.srv.set(func(s *manifestServer) { s.gzip = true })
	f.poll()
	f.wantPods("nginx:1")
	f.srv.mu.Lock()
	defer f.srv.mu.Unlock()
	if got := f.srv.gotHdr.Get("Authorization"); got != "Bearer s3cret" {
		t.Fatalf("Authorization %q", got)
	}
}

func TestHTTPCAFile(t *testing.T) {
	srv := &manifestServer{body: []byte(podManifest("web", "nginx:1"))}
	ts := httptest.NewTLSServer(srv)
	defer ts.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})
	if err := os.WriteFile(ca, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, withCA := range []bool{true, false} {
		cfg := HTTPConfig{URL: ts.URL + "/pods.yaml", Timeout: time.Second}
		if withCA {
			cfg.CAFile = ca
		}
		sink := newFakeSink()
		h, err := NewHTTP(cfg, sink)
		if err != nil {
			t.Fatal(err)
		}
		h.start(context.Background())
		h.poll(context.Background())
		st := h.Status()
		if withCA && (st.Error != "" || len(sink.history()) != 1) {
			t.Fatalf("with CA: %+v", st)
		}
		if !withCA && (!strings.Contains(st.Error, "certificate") || len(sink.history()) != 0) {
			t.Fatalf("without CA: %+v", st)
		}
	}
}

func TestNewHTTPErrors(t *testing.T) {
	for _, cfg := range []HTTPConfig{
		{URL: "ftp://x/y"},
		{URL: "/just/a/path"},
		{URL: "http://x/", CAFile: "/nonexistent"},
		{URL: "http://x/", VerifyKeys: []ed25519.PublicKey{{1, 2}}},
		{URL: "http://x/", ClientCert: "/a.pem"},
		{URL: "http://x/", CAReplace: true},
		{URL: "http://u:p@x/\x7f?token=t"},
	} {
		if _, err := NewHTTP(cfg, newFakeSink()); err == nil {
			t.Errorf("NewHTTP(%+v): no error", cfg)
		}
	}
}

func TestHTTPSignatures(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	pub2, priv2, _ := ed25519.GenerateKey(nil)
	_, otherPriv, _ := ed25519.GenerateKey(nil)
	keys := []ed25519.PublicKey{pub, pub2}
	good := podManifest("web", "nginx:1")
	next := podManifest("web", "nginx:2")
	soon := time.Now().Add(time.Hour)
	tests := []struct {
		name   string
		body   []byte
		accept bool
		err    error
	}{
		{"newer version", seal(t, priv, 6, next), true, nil},
		{"same version", seal(t, priv, 5, next), true, nil},
		{"second key", seal(t, priv2, 6, next), true, nil},
		{"for this node", sealHeader(t, priv, bundle.EnvelopeHeader{Version: 6, NotAfter: soon, Nodes: []string{"other", "node*"}}, next), true, nil},
		{"older version", seal(t, priv, 4, next), false, bundle.ErrRollback},
		{"bare body", []byte(next), false, bundle.ErrNotEnvelope},
		{"wrong key", seal(t, otherPriv, 6, next), false, bundle.ErrBadSignature},
		{"expired", sealHeader(t, priv, bundle.EnvelopeHeader{Version: 6, NotAfter: time.Now().Add(-time.Second)}, next), false, bundle.ErrExpired},
		{"other node", sealHeader(t, priv, bundle.EnvelopeHeader{Version: 6, NotAfter: soon, Nodes: []string{"node2"}}, next), false, bundle.ErrOtherNode},
		{"body swapped", swapBody(seal(t, priv, 6, good), next), false, bundle.ErrBadEnvelope},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			withKeys := func(c *HTTPConfig) { c.VerifyKeys = keys }
			f := newHTTPFixture(t, "", withKeys)
			f.srv.set(func(s *manifestServer) { s.body = seal(t, priv, 5, good) })
			f.poll()
			f.wantPods("nginx:1")
			f.srv.set(func(s *manifestServer) { s.body = tc.body })
			f.poll()
			h := f.sink.history()
			last := h[len(h)-1].files[0]
			if tc.accept {
				f.wantPods("nginx:2")
				// The checkpoint holds the bundle and verifies at restart.
				f.h = f.newSource(withKeys)
				f.wantPods("nginx:2")
				return
			}
			if !errors.Is(last.Err, tc.err) {
				t.Fatalf("last Set err %v, want %v", last.Err, tc.err)
			}
			f.wantPods("nginx:1")
			if cp, err := readCheckpoint(f.ckpt); err != nil || cp.BundleVersion != 5 {
				t.Fatalf("checkpoint after a refused bundle: version %d, %v", cp.BundleVersion, err)
			}
		})
	}
}

func TestHTTPVersionFloorSurvivesUnusableCheckpoint(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	newPub, newPriv, _ := ed25519.GenerateKey(nil)
	f := newHTTPFixture(t, "", func(c *HTTPConfig) { c.VerifyKeys = []ed25519.PublicKey{pub} })
	f.srv.set(func(s *manifestServer) { s.body = seal(t, priv, 9, podManifest("web", "nginx:9")) })
	f.poll()
	f.wantPods("nginx:9")
	// The old key is retired: the checkpoint no longer verifies, is
	// ignored, but its version stays the floor.
	f.h = f.newSource(func(c *HTTPConfig) { c.VerifyKeys = []ed25519.PublicKey{newPub} })
	if n := f.sets(); n != 0 {
		t.Fatalf("%d Sets from a checkpoint signed by a retired key", n)
	}
	f.srv.set(func(s *manifestServer) { s.body = seal(t, newPriv, 3, podManifest("web", "nginx:3")) })
	f.poll()
	if n := f.sets(); n != 0 || !strings.Contains(f.h.Status().Error, "older") {
		t.Fatalf("an older bundle after key rotation: %d sets, status %+v", n, f.h.Status())
	}
	f.srv.set(func(s *manifestServer) { s.body = seal(t, newPriv, 10, podManifest("web", "nginx:10")) })
	f.poll()
	f.wantPods("nginx:10")
}

func TestHTTPValidators(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(nil)
	pub := priv.Public().(ed25519.PublicKey)
	f := newHTTPFixture(t, "", func(c *HTTPConfig) { c.VerifyKeys = []ed25519.PublicKey{pub} })
	// A 16 KiB ETag is not kept: the next request is unconditional.
	f.srv.set(func(s *manifestServer) {
		s.body, s.etag = seal(t, priv, 1, podManifest("web", "nginx:1")), `"`+strings.Repeat("e", 16<<10)+`"`
	})
	f.poll()
	f.wantPods("nginx:1")
	if cp, _ := readCheckpoint(f.ckpt); cp.ETag != "" || f.h.acc.etag != "" {
		t.Fatalf("long ETag kept: %d bytes", len(cp.ETag))
	}
	f.poll()
	if f.srv.gotHdr.Get("If-None-Match") != "" {
		t.Fatal("long ETag sent back")
	}
	// A refused bundle's ETag is not kept.
	f.srv.set(func(s *manifestServer) { s.body, s.etag = []byte(podManifest("web", "evil")), `"evil"` })
	f.poll()
	if f.h.acc.etag == `"evil"` {
		t.Fatal("the ETag of a refused body was kept")
	}
	// Once the accepted bundle has expired, requests are unconditional and
	// a 304 is an error.
	f.srv.set(func(s *manifestServer) {
		s.body, s.etag = sealHeader(t, priv, bundle.EnvelopeHeader{Version: 2, NotAfter: time.Now().Add(300 * time.Millisecond)}, podManifest("web", "nginx:2")), `"v2"`
	})
	f.poll()
	f.wantPods("nginx:2")
	f.poll()
	if f.h.Status().NotModified == 0 {
		t.Fatal("no 304 while fresh")
	}
	time.Sleep(400 * time.Millisecond)
	f.poll()
	f.srv.mu.Lock()
	inm := f.srv.gotHdr.Get("If-None-Match")
	f.srv.mu.Unlock()
	if inm != "" {
		t.Fatalf("conditional request (%q) for an expired bundle", inm)
	}
	if st := f.h.Status(); !strings.Contains(st.Error, "expired") {
		t.Fatalf("the expired bundle served again: status %+v", st)
	}
	f.wantPods("nginx:2")
}

// seal returns body in a bundle of version, valid for an hour, signed by
// priv.
func seal(t *testing.T, priv ed25519.PrivateKey, version uint64, body string) []byte {
	t.Helper()
	return sealHeader(t, priv, bundle.EnvelopeHeader{Version: version, NotAfter: time.Now().Add(time.Hour)}, body)
}

func sealHeader(t *testing.T, priv ed25519.PrivateKey, hdr bundle.EnvelopeHeader, body string) []byte {
	t.Helper()
	b, err := bundle.SealEnvelope(priv, hdr, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// swapBody replaces the body of a bundle, keeping its signed header.
func swapBody(sealed []byte, body string) []byte {
	env, err := bundle.ParseEnvelope(sealed)
	if err != nil {
		panic(err)
	}
	return append(sealed[:len(sealed)-len(env.Body):len(sealed)-len(env.Body)], body...)
}

func TestHTTPCheckpointWithoutSignatureRejectedWithKey(t *testing.T) {
	f := newHTTPFixture(t, podManifest("web", "nginx:1"))
	f.poll()
	pub, _, _ := ed25519.GenerateKey(nil)
	f.h = f.newSource(func(c *HTTPConfig) { c.VerifyKeys = []ed25519.PublicKey{pub} })
	if n := f.sets(); n != 0 {
		t.Fatalf("unsigned checkpoint accepted with a verify key: %d sets", n)
	}
	if !strings.Contains(f.logs.String(), "not a signed bundle") {
		t.Fatalf("logs: %s", f.logs)
	}
}

func TestHTTPRun(t *testing.T) {
	f := newHTTPFixture(t, podManifest("web", "nginx:1"), func(c *HTTPConfig) { c.Period = 10 * time.Millisecond })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.h.Run(ctx) }()
	f.sink.waitFor(t, 5*time.Second, "nginx:1", func(s snapshot) bool { return s.hasPod("pods.yaml", "nginx:1") })
	f.srv.set(func(s *manifestServer) { s.body = []byte(podManifest("web", "nginx:2")) })
	f.sink.waitFor(t, 5*time.Second, "nginx:2", func(s snapshot) bool { return s.hasPod("pods.yaml", "nginx:2") })
	for f.h.Status().NotModified == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return")
	}
	if n := f.srv.full.Load(); n != 2 {
		t.Errorf("%d full responses, want 2", n)
	}
}

func TestJitter(t *testing.T) {
	for range 1000 {
		if d := jitter(time.Second); d < 900*time.Millisecond || d > 1100*time.Millisecond {
			t.Fatalf("jitter %v", d)
		}
	}
}

func TestHTTPBundleWithoutKeys(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(nil)
	f := newHTTPFixture(t, "")
	f.srv.set(func(s *manifestServer) { s.body = seal(t, priv, 1<<62, podManifest("web", "nginx:1")) })
	f.poll()
	f.wantPods("nginx:1")
	// No key: the header is not authenticated, so its version sets no floor.
	f.srv.set(func(s *manifestServer) { s.body = seal(t, priv, 1, podManifest("web", "nginx:2")) })
	f.poll()
	f.wantPods("nginx:2")
	if cp, err := readCheckpoint(f.ckpt); err != nil || cp.BundleVersion != 0 {
		t.Fatalf("checkpoint version %d, %v", cp.BundleVersion, err)
	}
	// Nodes and expiry still apply.
	f.srv.set(func(s *manifestServer) {
		s.body = sealHeader(t, priv, bundle.EnvelopeHeader{Version: 3, NotAfter: time.Now().Add(time.Hour), Nodes: []string{"other"}}, podManifest("web", "nginx:3"))
	})
	f.poll()
	if st := f.h.Status(); !strings.Contains(st.Error, "other nodes") {
		t.Fatalf("status %+v", st)
	}
	f.wantPods("nginx:2")
}

// holdingSink is a fakeSink that holds the content of the hashes in held
// (as the window gate does while an update waits).
type holdingSink struct {
	*fakeSink
	mu   sync.Mutex
	held map[string]bool
}

func (s *holdingSink) Holds(_, hash string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held[hash]
}

func TestHTTPHeldContentIsNotCheckpointed(t *testing.T) {
	v1, v2 := podManifest("web", "nginx:1"), podManifest("web", "nginx:2")
	f := newHTTPFixture(t, v1)
	sink := &holdingSink{fakeSink: newFakeSink(), held: map[string]bool{sha256Hex([]byte(v2)): true}}
	newSource := func() *HTTP {
		h, err := NewHTTP(HTTPConfig{URL: f.ts.URL + "/pods.yaml", Timeout: time.Second, Checkpoint: f.ckpt, Hostname: "node1"}, sink)
		if err != nil {
			t.Fatal(err)
		}
		h.start(context.Background())
		return h
	}
	checkpointed := func() string {
		t.Helper()
		cp, err := readCheckpoint(f.ckpt)
		if err != nil {
			t.Fatal(err)
		}
		return string(cp.Body)
	}
	h := newSource()
	h.poll(context.Background())
	if got := checkpointed(); got != v1 {
		t.Fatalf("checkpoint %q, want v1", got)
	}
	f.srv.set(func(s *manifestServer) { s.body = []byte(v2) })
	h.poll(context.Background())
	h.poll(context.Background())
	if got := checkpointed(); got != v1 {
		t.Fatalf("held v2 checkpointed: %q", got)
	}
	// A restart while v2 is held starts v1 from the checkpoint.
	restarted := newSource()
	if hs := sink.history(); len(hs[len(hs)-1].files[0].Pods) != 1 || hs[len(hs)-1].files[0].Pods[0].Spec.Containers[0].Image != "nginx:1" {
		t.Fatalf("restart reported %+v, want v1's pods", hs[len(hs)-1].files[0])
	}
	// Passed on: the next poll checkpoints it.
	restarted.poll(context.Background())
	sink.mu.Lock()
	sink.held = nil
	sink.mu.Unlock()
	restarted.poll(context.Background())
	if got := checkpointed(); got != v2 {
		t.Fatalf("checkpoint %q after v2 passed, want v2", got)
	}
}

// TestIdleConnTimeout: the URL's idle connection outlives the poll period
// (with its jitter), so that each poll reuses it.
func TestIdleConnTimeout(t *testing.T) {
	for _, period := range []time.Duration{time.Second, 20 * time.Second, time.Minute, 5 * time.Minute, time.Hour} {
		got := idleConnTimeout(period)
		if got < 90*time.Second || got <= period*11/10 {
			t.Errorf("idleConnTimeout(%v) = %v, want at least 90s and longer than the period with its jitter", period, got)
		}
	}
}

// TestHTTPRolloutReported: a verified bundle's rollout plan and halt reach
// the sink with its content, from a fetch and from the checkpoint; an
// unverified bundle's do not (they name versions).
func TestHTTPRolloutReported(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	soon := time.Now().Add(time.Hour)
	plan := &wave.Plan{Start: soon, Waves: []wave.Wave{{Name: "canary", Labels: map[string]string{"ring": "canary"}}}}
	withKeys := func(c *HTTPConfig) { c.VerifyKeys = []ed25519.PublicKey{pub} }
	f := newHTTPFixture(t, "", withKeys)
	f.srv.set(func(s *manifestServer) {
		s.body = sealHeader(t, priv, bundle.EnvelopeHeader{Version: 5, NotAfter: soon, Rollout: plan}, podManifest("web", "nginx:5"))
	})
	f.poll()
	last, ok := f.lastGood()
	if !ok || !strings.Contains(last.Rollout.Plan, `"name":"canary"`) || last.Rollout.Halt != "" || last.Version != 5 {
		t.Fatalf("reported %+v, want the plan of version 5", last.Rollout)
	}
	f.h = f.newSource(withKeys)
	if last, _ := f.lastGood(); !strings.Contains(last.Rollout.Plan, `"name":"canary"`) {
		t.Fatalf("from the checkpoint: %+v, want the plan", last.Rollout)
	}
	f.srv.set(func(s *manifestServer) {
		s.body = sealHeader(t, priv, bundle.EnvelopeHeader{Version: 6, NotAfter: soon, Halt: &wave.Halt{Version: 5, Revert: true}}, podManifest("web", "nginx:4"))
	})
	f.poll()
	if last, _ := f.lastGood(); last.Rollout.Halt != `{"version":5,"revert":true}` || last.Rollout.Plan != "" {
		t.Fatalf("reported %+v, want the halt of version 5", last.Rollout)
	}

	u := newHTTPFixture(t, "")
	u.srv.set(func(s *manifestServer) {
		s.body = sealHeader(t, priv, bundle.EnvelopeHeader{Version: 5, NotAfter: soon, Rollout: plan}, podManifest("web", "nginx:5"))
	})
	u.poll()
	if last, ok := u.lastGood(); !ok || last.Rollout != (pod.Rollout{}) {
		t.Fatalf("without keys: reported %+v, want no plan", last.Rollout)
	}
}
