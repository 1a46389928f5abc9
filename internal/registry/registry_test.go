package registry

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/containerd/containerd/v2/core/remotes/docker/config"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

func TestValidHost(t *testing.T) {
	tests := []struct {
		host string
		want bool
	}{
		{"docker.io", true},
		{"registry-1.docker.io", true},
		{"127.0.0.1:5000", true},
		{"localhost", true},
		{"[::1]:5000", true},
		{"mirror.example.com:443", true},
		{"..", false},
		{".", false},
		{"../x", false},
		{"a/../../etc", false},
		{"", false},
		{"_default", false},
		{"-a.example", false},
		{"a..b", false},
		{"a b", false},
		{"host:port", false},
		{"a\x00b", false},
		{strings.Repeat("a", 256), false},
	}
	for _, tt := range tests {
		if got := ValidHost(tt.host); got != tt.want {
			t.Errorf("ValidHost(%q) = %v, want %v", tt.host, got, tt.want)
		}
	}
}

// TestHostDirStaysBelowRoot: containerd's HostDirFromRoot joins a host to
// the root as it is ("../x" is a sibling of the root); the Registry's
// lookup refuses such a host before it is a path.
func TestHostDirStaysBelowRoot(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "certs.d")
	outside := filepath.Join(base, "x")
	for _, d := range []string{root, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "hosts.toml"), []byte(`server = "https://attacker.example"`), 0o644); err != nil {
		t.Fatal(err)
	}
	if dir, err := config.HostDirFromRoot(root)("../x"); err != nil || dir != outside {
		t.Logf("HostDirFromRoot(../x) = %q, %v: containerd no longer escapes", dir, err)
	}
	r := New(Config{HostsDir: root})
	for _, host := range []string{"../x", "..", "a/../../x"} {
		if dir, err := r.hostDir(host); !errors.Is(err, ErrInvalidHost) {
			t.Errorf("hostDir(%q) = %q, %v; want ErrInvalidHost", host, dir, err)
		}
		if _, err := r.Hosts(context.Background(), nil, nil)(host); !errors.Is(err, ErrInvalidHost) {
			t.Errorf("Hosts(%q): %v; want ErrInvalidHost", host, err)
		}
	}
	// A missing directory is containerd's defaults.
	hosts, err := New(Config{HostsDir: filepath.Join(base, "missing")}).Hosts(context.Background(), nil, nil)("registry.example")
	if err != nil || len(hosts) != 1 || hosts[0].Host != "registry.example" || hosts[0].Scheme != "https" || hosts[0].Path != "/v2" {
		t.Errorf("hosts without a directory = %+v, %v; want the registry itself over https", hosts, err)
	}
}

// fakeRegistry serves one image (a manifest and its config blob) of
// repository repo, tag "1", below prefix (prefix+"/REPO/manifests/..."),
// and counts the requests it answers. A non-empty user asks for basic
// auth.
type fakeRegistry struct {
	srv      *httptest.Server
	manifest ocispec.Descriptor
	user     string

	mu     sync.Mutex
	hits   []string // method and path (with query) of each request answered 2xx
	protos []string // the protocol of each of them (HTTP/1.1, HTTP/2.0)
	conns  int      // connections accepted
}

const testRepo = "team/app"

func newFakeRegistry(t *testing.T, prefix string, tlsServer bool, user string) *fakeRegistry {
	t.Helper()
	cfg := []byte(`{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}`)
	cfgDesc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageConfig, Digest: digest.FromBytes(cfg), Size: int64(len(cfg))}
	m, err := json.Marshal(ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, Config: cfgDesc, Layers: []ocispec.Descriptor{}})
	if err != nil {
		t.Fatal(err)
	}
	m = append([]byte(`{"schemaVersion":2,`), m[1:]...)
	f := &fakeRegistry{user: user, manifest: ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(m), Size: int64(len(m))}}
	blobs := map[string][]byte{cfgDesc.Digest.String(): cfg}
	mux := http.NewServeMux()
	serve := func(w http.ResponseWriter, r *http.Request, b []byte, mediaType string) {
		f.mu.Lock()
		f.hits = append(f.hits, r.Method+" "+r.URL.RequestURI())
		f.protos = append(f.protos, r.Proto)
		f.mu.Unlock()
		w.Header().Set("Content-Type", mediaType)
		w.Header().Set("Docker-Content-Digest", digest.FromBytes(b).String())
		w.Header().Set("Content-Length", fmt.Sprint(len(b)))
		if r.Method == http.MethodGet {
			w.Write(b)
		}
	}
	auth := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if u, _, ok := r.BasicAuth(); user != "" && (!ok || u != user) {
				w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			h(w, r)
		}
	}
	mux.HandleFunc(prefix+"/"+testRepo+"/manifests/{ref}", auth(func(w http.ResponseWriter, r *http.Request) {
		if ref := r.PathValue("ref"); ref != "1" && ref != f.manifest.Digest.String() {
			http.NotFound(w, r)
			return
		}
		serve(w, r, m, ocispec.MediaTypeImageManifest)
	}))
	mux.HandleFunc(prefix+"/"+testRepo+"/blobs/{digest}", auth(func(w http.ResponseWriter, r *http.Request) {
		b, ok := blobs[r.PathValue("digest")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		serve(w, r, b, "application/octet-stream")
	}))
	f.srv = httptest.NewUnstartedServer(mux)
	f.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			f.mu.Lock()
			f.conns++
			f.mu.Unlock()
		}
	}
	if tlsServer {
		f.srv.EnableHTTP2 = true
		f.srv.StartTLS()
	} else {
		f.srv.Start()
	}
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeRegistry) host() string { return f.srv.Listener.Addr().String() }

func (f *fakeRegistry) answered() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.hits...)
}

// writeHosts writes hosts.toml for registry host into root, in the
// directory containerd's layout names HOST_PORT_.
func writeHosts(t *testing.T, root, host, toml string) {
	t.Helper()
	dir := filepath.Join(root, strings.Replace(host, ":", "_", 1)+"_")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hosts.toml"), []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
}

// pullConfig resolves TAG 1 of testRepo on upstream through r and fetches
// the image's config blob, returning the hosts observed.
func pullConfig(t *testing.T, r *Registry, upstream string, creds Credentials) ([]Served, error) {
	t.Helper()
	ctx := context.Background()
	var (
		mu   sync.Mutex
		seen []Served
	)
	res := r.Resolver(ctx, creds, func(s Served) {
		mu.Lock()
		seen = append(seen, s)
		mu.Unlock()
	})
	ref := upstream + "/" + testRepo + ":1"
	_, desc, err := res.Resolve(ctx, ref)
	if err != nil {
		return seen, err
	}
	fetcher, err := res.Fetcher(ctx, ref)
	if err != nil {
		return seen, err
	}
	rc, err := fetcher.Fetch(ctx, desc)
	if err != nil {
		return seen, err
	}
	var m ocispec.Manifest
	err = json.NewDecoder(rc).Decode(&m)
	rc.Close()
	if err != nil {
		return seen, err
	}
	rc, err = fetcher.Fetch(ctx, m.Config)
	if err != nil {
		return seen, err
	}
	_, err = io.Copy(io.Discard, rc)
	rc.Close()
	mu.Lock()
	defer mu.Unlock()
	return seen, err
}

// TestHostsToml: a hosts.toml read as containerd reads it: mirrors first
// (told apart from the upstream in what the resolver observes), the
// upstream when the mirror fails, a mirror of its own CA, basic auth asked
// of the host that asks, and override_path for a pull-through cache
// below a path.
func TestHostsToml(t *testing.T) {
	t.Run("mirror serves", func(t *testing.T) {
		up, mirror := newFakeRegistry(t, "/v2", false, ""), newFakeRegistry(t, "/v2", false, "")
		root := t.TempDir()
		writeHosts(t, root, up.host(), fmt.Sprintf("server = \"http://%s\"\n\n[host.\"http://%s\"]\n  capabilities = [\"pull\", \"resolve\"]\n", up.host(), mirror.host()))
		seen, err := pullConfig(t, New(Config{HostsDir: root}), up.host(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(up.answered()) != 0 || len(mirror.answered()) != 3 {
			t.Errorf("upstream answered %q, mirror %q; want the mirror's HEAD and two GETs only", up.answered(), mirror.answered())
		}
		if got := mirror.answered(); len(got) > 0 && !strings.Contains(got[0], "ns="+url.QueryEscape(up.host())) {
			t.Errorf("mirror request %q has no ns=%s, as containerd asks of a mirror", got[0], up.host())
		}
		for _, s := range seen {
			if s != (Served{Host: mirror.host(), Mirror: true}) {
				t.Errorf("observed %+v, want the mirror %s", s, mirror.host())
			}
		}
		if len(seen) != 3 {
			t.Errorf("observed %d answers, want 3", len(seen))
		}
	})
	t.Run("upstream when the mirror fails", func(t *testing.T) {
		up, mirror := newFakeRegistry(t, "/v2", false, ""), newFakeRegistry(t, "/v2", false, "")
		mirror.srv.Close()
		root := t.TempDir()
		writeHosts(t, root, up.host(), fmt.Sprintf("[host.\"http://%s\"]\n  capabilities = [\"pull\", \"resolve\"]\n", mirror.host()))
		// No server: the upstream is the registry itself; 127.0.0.1 is
		// reached over https first, then http, as containerd does.
		seen, err := pullConfig(t, New(Config{HostsDir: root}), up.host(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(seen) != 3 || seen[0] != (Served{Host: up.host()}) {
			t.Errorf("observed %+v, want three answers of the upstream %s", seen, up.host())
		}
	})
	t.Run("mirror with its own CA", func(t *testing.T) {
		up, mirror := newFakeRegistry(t, "/v2", false, ""), newFakeRegistry(t, "/v2", true, "")
		root := t.TempDir()
		toml := fmt.Sprintf("server = \"http://%s\"\n[host.\"https://%s\"]\n  capabilities = [\"pull\", \"resolve\"]\n", up.host(), mirror.host())
		writeHosts(t, root, up.host(), toml)
		// Without the CA the mirror's certificate is not trusted: the
		// upstream serves.
		seen, err := pullConfig(t, New(Config{HostsDir: root}), up.host(), nil)
		if err != nil || len(seen) == 0 || seen[0].Mirror {
			t.Fatalf("without the mirror's CA: observed %+v, %v; want the upstream", seen, err)
		}
		ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: mirror.srv.Certificate().Raw})
		dir := filepath.Join(root, strings.Replace(up.host(), ":", "_", 1)+"_")
		if err := os.WriteFile(filepath.Join(dir, "mirror-ca.pem"), ca, 0o644); err != nil {
			t.Fatal(err)
		}
		writeHosts(t, root, up.host(), toml+"  ca = \"mirror-ca.pem\"\n")
		seen, err = pullConfig(t, New(Config{HostsDir: root}), up.host(), nil)
		if err != nil || len(seen) != 3 || seen[0] != (Served{Host: mirror.host(), Mirror: true}) {
			t.Errorf("with the mirror's CA: observed %+v, %v; want the mirror", seen, err)
		}
	})
	t.Run("credentials of the mirror", func(t *testing.T) {
		up, mirror := newFakeRegistry(t, "/v2", false, ""), newFakeRegistry(t, "/v2", false, "mirror-user")
		root := t.TempDir()
		writeHosts(t, root, up.host(), fmt.Sprintf("server = \"http://%s\"\n[host.\"http://%s\"]\n  capabilities = [\"pull\", \"resolve\"]\n", up.host(), mirror.host()))
		var asked []string
		creds := func(host string) (string, string, error) {
			asked = append(asked, host)
			if host == mirror.host() {
				return "mirror-user", "pw", nil
			}
			return "", "", nil
		}
		seen, err := pullConfig(t, New(Config{HostsDir: root}), up.host(), creds)
		if err != nil || len(seen) != 3 || !seen[0].Mirror {
			t.Errorf("observed %+v, %v; want the mirror, with its credentials", seen, err)
		}
		if len(asked) == 0 || asked[0] != mirror.host() {
			t.Errorf("credentials asked for %q, want %s", asked, mirror.host())
		}
	})
	t.Run("override_path", func(t *testing.T) {
		up, mirror := newFakeRegistry(t, "/v2", false, ""), newFakeRegistry(t, "/cache/v2", false, "")
		root := t.TempDir()
		writeHosts(t, root, up.host(), fmt.Sprintf("server = \"http://%s\"\n[host.\"http://%s/cache/v2\"]\n  capabilities = [\"pull\", \"resolve\"]\n  override_path = true\n", up.host(), mirror.host()))
		seen, err := pullConfig(t, New(Config{HostsDir: root}), up.host(), nil)
		if err != nil || len(seen) != 3 || !seen[0].Mirror || len(mirror.answered()) != 3 {
			t.Errorf("observed %+v, %v, mirror answered %q; want the mirror below /cache/v2", seen, err, mirror.answered())
		}
	})
	t.Run("the upstream named as a host is no mirror", func(t *testing.T) {
		up := newFakeRegistry(t, "/v2", false, "")
		root := t.TempDir()
		writeHosts(t, root, up.host(), fmt.Sprintf("server = \"http://%s\"\n[host.\"http://%s\"]\n  capabilities = [\"pull\", \"resolve\"]\n", up.host(), up.host()))
		seen, err := pullConfig(t, New(Config{HostsDir: root}), up.host(), nil)
		if err != nil || len(seen) != 3 || seen[0] != (Served{Host: up.host()}) {
			t.Errorf("observed %+v, %v; want the upstream, not a mirror", seen, err)
		}
	})
}
