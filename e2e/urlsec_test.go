//go:build e2e

package e2e

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tug/internal/bundle"
	"tug/internal/podview"
	"tug/internal/testutil"
)

// tugSign signs body with "tug sign --key key more...", and returns the
// bundle it wrote.
func tugSign(t *testing.T, key, body string, more ...string) []byte {
	t.Helper()
	dir := t.TempDir()
	in, out := filepath.Join(dir, "pods.yaml"), filepath.Join(dir, "pods.signed")
	if err := os.WriteFile(in, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"sign", "--key", key, "-o", out}, more...)
	if b, err := exec.Command(tugBin, append(args, in)...).CombinedOutput(); err != nil {
		t.Fatalf("tug %v: %v\n%s", args, err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sealUnchecked signs body as "tug sign --version version" would, without
// tug sign's check that it is a valid manifest: what a server may send that
// the device must refuse (a truncated body, an error page, an oversized
// one) still carries a good signature.
func sealUnchecked(t *testing.T, key, body string, version uint64) []byte {
	t.Helper()
	pemKey, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	priv, err := bundle.ParsePrivateKey(pemKey)
	if err != nil {
		t.Fatal(err)
	}
	b, err := bundle.SealEnvelope(priv, bundle.EnvelopeHeader{Version: version, NotAfter: time.Now().Add(24 * time.Hour).Truncate(time.Second)}, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// wantURLError waits until /manifests shows an error for the URL source
// that contains one of words, and returns it.
func (tg *tug) wantURLError(src string, words ...string) string {
	tg.t.Helper()
	m := tg.waitURLManifest(fetchTimeout, src, fmt.Sprintf("an error naming one of %q", words), func(m *podview.ManifestStatus) error {
		msg := strings.ToLower(manifestError(m))
		for _, w := range words {
			if strings.Contains(msg, strings.ToLower(w)) {
				return nil
			}
		}
		return fmt.Errorf("error %q", msg)
	})
	return manifestError(&m)
}

// checkpointFile returns the path of the URL source's only checkpoint.
func (tg *tug) checkpointFile() string {
	tg.t.Helper()
	files, _ := filepath.Glob(filepath.Join(tg.rootDir, "checkpoints", "*.json"))
	if len(files) != 1 {
		tg.t.Fatalf("checkpoints: %v, want one", files)
	}
	return files[0]
}

// TestURLBadAnswerKeepsPods: with no usable checkpoint (lost, or ignored
// after a key rotation), no bad answer removes the URL's pods; only a
// valid, verified empty answer does.
func TestURLBadAnswerKeepsPods(t *testing.T) {
	t.Parallel()
	image, _ := testutil.TestImage(t)
	body := twoPods(image, idle)
	srv := newManifestServer(t, good(body))
	tg := urlTug(t, srv.url)
	uidA, uidB := urlUID(srv.url, "urla"), urlUID(srv.url, "urlb")
	tg.waitRunningUID(startTimeout, uidA, "a", 0)
	tg.waitRunningUID(startTimeout, uidA, "b", 0)
	tg.waitRunningUID(startTimeout, uidB, "main", 0)
	tg.checkpointFile()
	want := tg.tasksOf(uidA, uidB)

	// The checkpoint is lost while tug is down, and the URL answers badly.
	if err := tg.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(tg.rootDir, "checkpoints")); err != nil {
		t.Fatal(err)
	}
	html := []byte("<!DOCTYPE html>\n<html><body><h1>Welcome to the captive portal</h1></body></html>\n")
	srv.set(answer{body: html, header: http.Header{"Content-Type": {"text/html"}}})
	tg.Start()
	for _, c := range []struct {
		name  string
		a     answer
		words []string
	}{
		{"HTML page with 200", answer{body: html}, []string{"yaml", "parse", "decode", "kind", "cannot"}},
		{"garbage", answer{body: []byte("\x00\x01\xff{{{[[[")}, []string{"yaml", "parse", "decode", "kind", "cannot", "control"}},
		{"oversize body", answer{body: []byte(body + "\n#" + strings.Repeat("x", 11<<20) + "\n")}, []string{"larger"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tg := tg.forTest(t)
			full, _ := srv.counts()
			srv.set(c.a)
			tg.waitFor(fetchTimeout, "the new answer fetched", func() (bool, error) {
				n, _ := srv.counts()
				return n >= full+2, nil
			})
			t.Logf("error shown: %s", tg.wantURLError(srv.url, c.words...))
			time.Sleep(syncFrequency + time.Second) // past housekeeping
			if err := tg.sameTasks(want); err != nil {
				t.Fatalf("after a bad answer with no checkpoint: %v", err)
			}
		})
	}

	// A verify key is configured now, still with no checkpoint: a bundle
	// signed by another key, then a bare body, leave the pods alone.
	keys, other := t.TempDir(), t.TempDir()
	_, pubPath := keyPair(t, keys, "fleet")
	keyPair(t, other, "wrong")
	wrongKey := filepath.Join(other, "wrong.pem")
	if err := tg.Stop(); err != nil {
		t.Fatal(err)
	}
	tg.args = append(tg.args, "--manifest-verify-key", pubPath)
	srv.set(answer{body: tugSign(t, wrongKey, body)})
	tg.Start()
	t.Logf("wrong key: %s", tg.wantURLError(srv.url, "signature"))
	srv.set(good(body))
	t.Logf("bare body: %s", tg.wantURLError(srv.url, "not a signed bundle"))
	time.Sleep(syncFrequency + time.Second)
	if err := tg.sameTasks(want); err != nil {
		t.Fatalf("after bad signatures with no usable checkpoint: %v", err)
	}

	// The same pods, signed: adopted as they run. Then a signed empty
	// bundle: a valid answer with no pods removes them.
	key := filepath.Join(keys, "fleet.pem")
	srv.set(answer{body: tugSign(t, key, body, "--version", "1")})
	tg.waitURLManifest(fetchTimeout, srv.url, "the signed pods accepted", func(m *podview.ManifestStatus) error {
		if manifestError(m) != "" || len(m.UIDs) != 2 {
			return fmt.Errorf("error %q, uids %v", manifestError(m), m.UIDs)
		}
		return nil
	})
	if err := tg.sameTasks(want); err != nil {
		t.Fatalf("the signed pods: %v", err)
	}
	srv.set(answer{body: tugSign(t, key, "", "--version", "2")})
	tg.waitFor(removeTimeout, "the pods of an empty signed bundle to go", func() (bool, error) {
		cs, err := tg.containers()
		return err == nil && len(cs) == 0, err
	})
}

// TestURLSignedBundles: a bundle older than the applied one, expired, or
// for another node is refused and changes nothing; several keys verify
// (rotation); a tug restart keeps the version floor; long validators are
// not kept.
func TestURLSignedBundles(t *testing.T) {
	t.Parallel()
	image, _ := testutil.TestImage(t)
	keys := t.TempDir()
	keyPair(t, keys, "old")
	keyPair(t, keys, "new")
	priv := t.TempDir() // private keys outside the directory of public ones
	for _, n := range []string{"old", "new"} {
		if err := os.Rename(filepath.Join(keys, n+".pem"), filepath.Join(priv, n+".pem")); err != nil {
			t.Fatal(err)
		}
	}
	oldKey, newKey := filepath.Join(priv, "old.pem"), filepath.Join(priv, "new.pem")
	v := func(n int) string { return shPod("signed", image, fmt.Sprintf("echo v%d; %s", n, idle)) }

	srv := newManifestServer(t, answer{body: tugSign(t, oldKey, v(10), "--version", "10", "--node", "e*")})
	tg := urlTug(t, srv.url, "--manifest-verify-key", keys)
	uid := urlUID(srv.url, "signed")
	c0 := tg.waitRunningUID(startTimeout, uid, "main", 0)
	want := tg.tasksOf(uid)

	expiring := tugSign(t, oldKey, v(12), "--version", "12", "--expires", "1s")
	time.Sleep(1500 * time.Millisecond)
	for _, c := range []struct {
		name  string
		a     answer
		words []string
	}{
		{"older version", answer{body: tugSign(t, oldKey, v(9), "--version", "9")}, []string{"older"}},
		{"other node", answer{body: tugSign(t, oldKey, v(11), "--version", "11", "--node", "kiosk-*")}, []string{"other nodes"}},
		{"expired", answer{body: expiring}, []string{"expired"}},
		{"bare body with a detached signature", good(v(13)), []string{"not a signed bundle"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tg := tg.forTest(t)
			srv.set(c.a)
			t.Logf("error shown: %s", tg.wantURLError(srv.url, c.words...))
			time.Sleep(4 * httpCheck)
			if err := tg.sameTasks(want); err != nil {
				t.Fatal(err)
			}
		})
	}
	// The same version again (a re-fetch) is fine.
	srv.set(answer{body: tugSign(t, oldKey, v(10), "--version", "10")})
	tg.waitURLManifest(fetchTimeout, srv.url, "version 10 again accepted", func(m *podview.ManifestStatus) error {
		if e := manifestError(m); e != "" {
			return fmt.Errorf("error %q", e)
		}
		return nil
	})
	if err := tg.sameTasks(want); err != nil {
		t.Fatal(err)
	}

	// The fleet rolls to the new key: version 11 signed by it runs. Its
	// ETag is 16 KiB: not kept.
	srv.set(answer{body: tugSign(t, newKey, v(11), "--version", "11"), etag: `"` + strings.Repeat("e", 16<<10) + `"`})
	c1 := tg.waitRunningUID(removeTimeout, uid, "main", 1)
	if c1.ID == c0.ID {
		t.Fatalf("not recreated: %v", c1)
	}
	var cp struct {
		ETag          string `json:"etag"`
		BundleVersion uint64 `json:"bundleVersion"`
	}
	tg.waitFor(fetchTimeout, "the checkpoint of version 11", func() (bool, error) {
		data, err := os.ReadFile(tg.checkpointFile())
		if err != nil {
			return false, err
		}
		if err := json.Unmarshal(data, &cp); err != nil {
			return false, err
		}
		return cp.BundleVersion == 11, fmt.Errorf("checkpoint version %d", cp.BundleVersion)
	})
	if cp.ETag != "" {
		t.Errorf("a %d-byte ETag was checkpointed", len(cp.ETag))
	}

	// Restarted while the server replays version 10: the checkpoint's
	// version 11 stays.
	if err := tg.Stop(); err != nil {
		t.Fatal(err)
	}
	srv.set(answer{body: tugSign(t, oldKey, v(10), "--version", "10")})
	tg.Start()
	t.Logf("replay after a restart: %s", tg.wantURLError(srv.url, "older"))
	time.Sleep(syncFrequency + time.Second)
	c, ok, err := tg.container(uid, "main")
	if err != nil || !ok || c.ID != c1.ID || c.PID != c1.PID {
		t.Fatalf("after the replay: %v (found %v, %v), want %v", c, ok, err, c1)
	}
}

// TestURLSecretsNeverShown: the URL's password and token and the headers'
// values reach the server and nothing else: not tug's log, not `tug pods`,
// not /manifests, not the checkpoint, not the containers' labels.
func TestURLSecretsNeverShown(t *testing.T) {
	t.Parallel()
	image, _ := testutil.TestImage(t)
	const (
		password = "pw-Secret-1111"
		token    = "tok-Secret-2222"
		apiKey   = "key-Secret-3333"
		bearer   = "bearer-Secret-4444"
	)
	secrets := []string{password, token, apiKey, bearer}
	var (
		mu     sync.Mutex
		broken bool
	)
	body := shPod("secret", image, idle)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, pw, _ := r.BasicAuth()
		if pw != password || r.URL.Query().Get("token") != token || r.Header.Get("X-Api-Key") != apiKey || r.Header.Get("X-Fleet-Auth") != "Bearer "+bearer {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		mu.Lock()
		b := broken
		mu.Unlock()
		if b {
			http.Error(w, "broken", http.StatusInternalServerError)
			return
		}
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	rawURL := fmt.Sprintf("http://fleet:%s@%s/pods.yaml?token=%s", password, u.Host, token)
	redacted := fmt.Sprintf("http://xxxxx@%s/pods.yaml?token=xxxxx", u.Host)
	hdrFile := filepath.Join(t.TempDir(), "headers")
	if err := os.WriteFile(hdrFile, []byte("# fleet\nX-Fleet-Auth: Bearer "+bearer+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tg := startTug(t, tugOpts{
		args: []string{"--manifest-url", rawURL, "--http-check-frequency", httpCheck.String(),
			"--manifest-url-header", "X-Api-Key: " + apiKey, "--manifest-url-header-file", hdrFile},
		beforeStart: func(tg *tug) {
			tg.relay(u.Host)
			// What an earlier tug left: a checkpoint named by, and holding,
			// the raw URL. It must go.
			sum := sha256.Sum256([]byte(rawURL))
			old := filepath.Join(tg.rootDir, "checkpoints", fmt.Sprintf("%x.json", sum[:8]))
			if err := os.MkdirAll(filepath.Dir(old), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(old, []byte(`{"version":1,"url":"`+rawURL+`"}`), 0o600); err != nil {
				t.Fatal(err)
			}
		},
	})
	uid := urlUID(redacted, "secret")
	tg.waitRunningUID(startTimeout, uid, "main", 0)
	tg.checkpointFile()

	// Failures whose errors name the URL: a 500, then nothing listening.
	mu.Lock()
	broken = true
	mu.Unlock()
	tg.wantURLError(redacted, "500")
	srv.Close()
	tg.wantURLError(redacted, "refused", "reset", "eof")

	pods, _, code := tg.runCLI("pods")
	if code != 0 || !strings.Contains(pods, "secret") {
		t.Fatalf("tug pods: exit %d\n%s", code, pods)
	}
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	ms, err := tg.api().Manifests(ctx)
	if err != nil {
		t.Fatal(err)
	}
	manifests, _ := json.Marshal(ms)
	ckpt, err := os.ReadFile(tg.checkpointFile())
	if err != nil {
		t.Fatal(err)
	}
	cs, err := tg.containers()
	if err != nil || len(cs) == 0 {
		t.Fatalf("containers: %v %v", cs, err)
	}
	labels, _ := json.Marshal(cs[0].Labels)
	var log strings.Builder
	for _, line := range strings.Split(tg.output(), "\n") {
		if !strings.HasPrefix(line, "==== ") { // the harness's own command lines
			log.WriteString(line + "\n")
		}
	}
	if !strings.Contains(string(labels), redacted) {
		t.Errorf("labels %s do not name the redacted URL %s", labels, redacted)
	}
	for what, text := range map[string]string{
		"tug's log": log.String(), "tug pods": pods, "/manifests": string(manifests),
		"the checkpoint": string(ckpt), "the container labels": string(labels),
	} {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s shows %q:\n%s", what, s, text)
			}
		}
	}
	if !strings.Contains(log.String(), "X-Api-Key: xxxxx") {
		t.Errorf("the start-up log does not name the header (without its value)")
	}
}

// TestURLRedirects: at most 5 hops, never from https to http, and the
// custom headers go only to the configured origin.
func TestURLRedirects(t *testing.T) {
	t.Parallel()
	image, _ := testutil.TestImage(t)
	body := shPod("redir", image, idle)
	const apiKey = "key-Secret-5555"
	var (
		mu      sync.Mutex
		mode    = "other"
		otherHd http.Header
		plain   atomic.Int64
	)
	empty := `{"apiVersion":"v1","kind":"List","items":[]}`
	other := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		otherHd = r.Header.Clone()
		mu.Unlock()
		w.Write([]byte(body))
	}))
	t.Cleanup(other.Close)
	insecure := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		plain.Add(1)
		w.Write([]byte(empty))
	}))
	t.Cleanup(insecure.Close)
	origin := httptest.NewUnstartedServer(nil)
	origin.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		m := mode
		mu.Unlock()
		switch {
		case r.Header.Get("X-Api-Key") != apiKey || (r.URL.Path == "/pods.yaml" && r.URL.Query().Get("token") != apiKey):
			http.Error(w, "no key", http.StatusUnauthorized)
		case m == "other":
			http.Redirect(w, r, other.URL+"/pods.yaml", http.StatusFound)
		case m == "http":
			http.Redirect(w, r, insecure.URL+"/pods.yaml", http.StatusFound)
		case m == "hops":
			// /pods.yaml -> /hop1 -> ... -> /hop7, which answers: 7 hops.
			var n int
			fmt.Sscanf(r.URL.Path, "/hop%d", &n)
			if n == 7 {
				w.Write([]byte(empty))
				return
			}
			http.Redirect(w, r, fmt.Sprintf("/hop%d", n+1), http.StatusFound)
		}
	})
	origin.StartTLS()
	t.Cleanup(origin.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: origin.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	src := origin.URL + "/pods.yaml?token=" + apiKey
	name := origin.URL + "/pods.yaml?token=xxxxx" // the source's (redacted) name
	tg := startTug(t, tugOpts{
		args: []string{"--manifest-url", src, "--http-check-frequency", httpCheck.String(),
			"--manifest-url-ca", ca, "--manifest-url-header", "X-Api-Key: " + apiKey},
		beforeStart: func(tg *tug) {
			for _, s := range []string{origin.URL, other.URL, insecure.URL} {
				u, _ := url.Parse(s)
				tg.relay(u.Host)
			}
		},
	})
	uid := urlUID(name, "redir")
	tg.waitRunningUID(startTimeout, uid, "main", 0)
	mu.Lock()
	got := otherHd
	mu.Unlock()
	if got == nil || got.Get("X-Api-Key") != "" || strings.Contains(got.Get("Referer"), apiKey) {
		t.Fatalf("the redirect's other host got the custom header or the token: %v", got)
	}
	want := tg.tasksOf(uid)
	for _, c := range []struct {
		mode  string
		words []string
	}{
		{"http", []string{"https to"}},
		{"hops", []string{"redirects"}},
	} {
		t.Run(c.mode, func(t *testing.T) {
			tg := tg.forTest(t)
			mu.Lock()
			mode = c.mode
			mu.Unlock()
			t.Logf("error shown: %s", tg.wantURLError(name, c.words...))
			time.Sleep(4 * httpCheck)
			if err := tg.sameTasks(want); err != nil {
				t.Fatal(err)
			}
		})
	}
	if n := plain.Load(); n != 0 {
		t.Errorf("the http server got %d requests after an https redirect", n)
	}
}

// TestURLMutualTLS: a server that requires a client certificate, with a
// CA that replaces the system roots: works with the certificate, not
// without (not ready, pods untouched), nor with a server of another CA.
func TestURLMutualTLS(t *testing.T) {
	t.Parallel()
	image, _ := testutil.TestImage(t)
	dir := t.TempDir()
	ca1, ca2 := testutil.NewCA(t, "fleet CA"), testutil.NewCA(t, "other CA")
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, ca1.PEM, 0o644); err != nil {
		t.Fatal(err)
	}
	clientCert, clientKey := ca1.Issue(t, dir, "device", nil)
	good1 := ca1.ServerPair(t, net.ParseIP("127.0.0.1"))
	bad2 := ca2.ServerPair(t, net.ParseIP("127.0.0.1"))
	var cert atomic.Pointer[tls.Certificate]
	cert.Store(&good1)
	clients := x509.NewCertPool()
	clients.AppendCertsFromPEM(ca1.PEM)
	body := shPod("mtls", image, idle)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(body)) }))
	// Per connection, so that the test can switch the server's certificate
	// (GetCertificate is not asked without SNI, and the URL has an IP).
	srv.TLS = &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		return &tls.Config{Certificates: []tls.Certificate{*cert.Load()}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clients}, nil
	}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	src := srv.URL + "/pods.yaml"
	tlsFlags := []string{"--manifest-url-ca", caFile, "--manifest-url-ca-mode", "replace"}
	withCert := append(tlsFlags, "--manifest-url-client-cert", clientCert, "--manifest-url-client-key", clientKey)
	tg := urlTug(t, src, withCert...)
	uid := urlUID(src, "mtls")
	tg.waitRunningUID(startTimeout, uid, "main", 0)
	tg.checkpointFile()
	want := tg.tasksOf(uid)

	restart := func(args []string) {
		t.Helper()
		if err := tg.Stop(); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(filepath.Join(tg.rootDir, "checkpoints")); err != nil {
			t.Fatal(err)
		}
		tg.args = append([]string{"--manifest-url", src, "--http-check-frequency", httpCheck.String()}, args...)
		tg.Start()
	}
	// No client certificate, no checkpoint: refused by the server.
	restart(tlsFlags)
	t.Logf("without a client certificate: %s", tg.wantURLError(src, "certificate", "tls"))
	time.Sleep(syncFrequency + time.Second)
	if err := tg.sameTasks(want); err != nil {
		t.Fatalf("without a client certificate: %v", err)
	}
	// The server's certificate from another CA: refused by tug.
	cert.Store(&bad2)
	restart(withCert)
	t.Logf("server of another CA: %s", tg.wantURLError(src, "unknown authority", "certificate"))
	time.Sleep(syncFrequency + time.Second)
	if err := tg.sameTasks(want); err != nil {
		t.Fatalf("server of another CA: %v", err)
	}
	// Back to the fleet's server: fetched again.
	cert.Store(&good1)
	tg.waitURLManifest(fetchTimeout, src, "the pods fetched over mTLS", func(m *podview.ManifestStatus) error {
		if e := manifestError(m); e != "" || len(m.UIDs) != 1 {
			return fmt.Errorf("error %q uids %v", e, m.UIDs)
		}
		return nil
	})
	if err := tg.sameTasks(want); err != nil {
		t.Fatal(err)
	}
}
