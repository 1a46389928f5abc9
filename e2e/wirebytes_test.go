//go:build e2e

package e2e

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"tug/internal/pod"
	"tug/internal/source"
	"tug/internal/testutil"
)

// countingRelay is a TCP proxy in tug's network namespace in front of a
// server on the host: it counts the connections tug opens.
type countingRelay struct {
	conns atomic.Int64
}

// start listens on addr in tug's namespace and forwards each connection to
// target; the end of the test closes them.
func (c *countingRelay) start(tg *tug, addr, target string) {
	t := tg.t
	l := listenIn(t, tg.netns, "tcp", addr)
	var (
		mu   sync.Mutex
		open []net.Conn
	)
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range open {
			c.Close()
		}
	})
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			c.conns.Add(1)
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			mu.Lock()
			open = append(open, in, out)
			mu.Unlock()
			go func() { _, _ = io.Copy(out, in); out.Close() }()
			go func() { _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
}

// TestOCISourceKeepsConnection: an OCI source polling a TLS registry
// (trusted through its hosts.toml's CA, behind a counting proxy) makes
// every poll, and the pull of the bundle, over one connection, HTTP/2
// where the registry offers it: a poll costs a request, not a TCP and TLS
// handshake each.
func TestOCISourceKeepsConnection(t *testing.T) {
	t.Parallel()
	image, _ := testutil.TestImage(t)
	reg := startRegistry(t, registryOpts{})
	dir := t.TempDir()
	ref := reg.Ref("tug/keep:prod")
	uid := pod.UID(source.OCIPrefix+ref, "default", staticName("kept"))
	bundlePush(t, "--unsigned", writeFile(t, dir, "v1.yaml", shPod("kept", image, idle)), ref)

	// The registry over TLS, HTTP/2 offered: a TLS reverse proxy in front.
	ca := testutil.NewCA(t, "registry CA")
	caFile := filepath.Join(dir, "ca.pem")
	must(t, os.WriteFile(caFile, ca.PEM, 0o644))
	regURL, _ := url.Parse("http://" + reg.Addr)
	var (
		requests atomic.Int64
		notH2    atomic.Int64
	)
	rp := httputil.NewSingleHostReverseProxy(regURL)
	front := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.ProtoMajor != 2 {
			notH2.Add(1)
		}
		rp.ServeHTTP(w, r)
	}))
	front.TLS = &tls.Config{Certificates: []tls.Certificate{ca.ServerPair(t, net.ParseIP("127.0.0.1"))}}
	front.EnableHTTP2 = true
	front.StartTLS()
	t.Cleanup(front.Close)

	relayAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	certs := filepath.Join(dir, "certs.d")
	writeHostsToml(t, certs, reg.Addr, fmt.Sprintf("server = \"https://%s\"\nca = %q\n", relayAddr, caFile))
	relay := &countingRelay{}
	tg := startTug(t, tugOpts{
		args:        []string{"--manifest-oci", ref, "--oci-check-frequency", ociCheck.String(), "--registry-config-dir", certs},
		beforeStart: func(tg *tug) { relay.start(tg, relayAddr, front.Listener.Addr().String()) },
	})
	tg.waitRunningUID(startTimeout, uid, "main", 0)
	pulled := requests.Load()
	const polls = 5
	tg.waitFor(polls*ociCheck*2+startTimeout, fmt.Sprintf("%d polls after the pull", polls), func() (bool, error) {
		return requests.Load() >= pulled+polls, nil
	})
	n := requests.Load()
	t.Logf("%d requests (%d after the pull) over %d connections", n, n-pulled, relay.conns.Load())
	if c := relay.conns.Load(); c != 1 {
		t.Errorf("tug opened %d connections to the registry for %d requests, want 1", c, n)
	}
	if k := notH2.Load(); k != 0 {
		t.Errorf("%d of %d requests were not HTTP/2, which the registry offers", k, n)
	}
}
