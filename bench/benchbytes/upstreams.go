package main

import (
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/containerd/containerd/v2/core/remotes/docker"

	"tug/bench/internal/kit"
	"tug/internal/bundle"
)

// servers are one tug's upstreams on the host's loopback: TLS (HTTP/2
// offered, as Go's server does) with certificates of a CA of their own,
// each counting the requests it answers.
type servers struct {
	caFile   string
	pubFile  string // the bundles' verify key
	priv     ed25519.PrivateKey
	registry string // plain-HTTP registry the bundles are pushed to

	regFront, urlSrv, statusSrv, writeSrv string                   // host addresses
	requests                              map[string]*atomic.Int64 // by feature
	stop                                  []func()
}

func startServers(dir, registry string) (*servers, error) {
	s := &servers{registry: registry, caFile: filepath.Join(dir, "ca.pem"), pubFile: filepath.Join(dir, "bundle.pub"), requests: map[string]*atomic.Int64{}}
	cert, caPEM, err := newCA()
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(s.caFile, caPEM, 0o644); err != nil {
		return nil, err
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	s.priv = priv
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(s.pubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644); err != nil {
		return nil, err
	}
	urlBody, err := bundle.SealEnvelope(priv, bundle.EnvelopeHeader{Version: 1, NotAfter: time.Now().Add(7 * 24 * time.Hour)}, []byte(kit.SleepPod("url-0", "docker.io/library/busybox:1.35", "IfNotPresent")))
	if err != nil {
		return nil, err
	}
	etag := fmt.Sprintf(`"%x"`, len(urlBody))
	regURL, _ := url.Parse("http://" + registry)
	handlers := []struct {
		feature string
		addr    *string
		h       http.Handler
	}{
		{"OCI poll", &s.regFront, httputil.NewSingleHostReverseProxy(regURL)},
		{"URL poll", &s.urlSrv, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("ETag", etag)
			if r.Header.Get("If-None-Match") == etag {
				w.WriteHeader(http.StatusNotModified)
				return
			}
			_, _ = w.Write(urlBody)
		})},
		{"status", &s.statusSrv, http.HandlerFunc(receive)},
		{"remote write", &s.writeSrv, http.HandlerFunc(receive)},
	}
	for _, h := range handlers {
		n := &atomic.Int64{}
		s.requests[h.feature] = n
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			s.close()
			return nil, err
		}
		next := h.h
		counted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { n.Add(1); next.ServeHTTP(w, r) })
		srv := &http.Server{Handler: counted, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
		go func() { _ = srv.ServeTLS(l, "", "") }()
		*h.addr = l.Addr().String()
		s.stop = append(s.stop, func() { srv.Close() })
	}
	return s, nil
}

func (s *servers) close() {
	for _, f := range s.stop {
		f()
	}
}

// receive is the status and remote-write receivers: the body read whole
// (gunzipped when it says so, as a receiver does), answered 204.
func receive(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		body = zr
	}
	if _, err := io.Copy(io.Discard, body); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// newCA returns a server certificate for 127.0.0.1 and the PEM of the CA
// that issued it.
func newCA() (tls.Certificate, []byte, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "benchbytes CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(7 * 24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(7 * 24 * time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), nil
}

// counts is what crossed one proxy: bytes each way (TCP payload),
// connections accepted, and the bytes of the same streams at the IP level
// (-1: not counted).
type counts struct {
	up, down, conns, ipBytes, requests int64
}

func (c counts) payload() int64 { return c.up + c.down }

func (c counts) add(o counts) counts {
	ip := c.ipBytes + o.ipBytes
	if c.ipBytes < 0 || o.ipBytes < 0 {
		ip = -1
	}
	return counts{c.up + o.up, c.down + o.down, c.conns + o.conns, ip, c.requests + o.requests}
}

// counter counts one proxy's streams.
type counter struct{ up, down, conns atomic.Int64 }

// upstreams are one tug's: a proxy per feature listening in its network
// namespace, and its own OCI repository.
type upstreams struct {
	srv     *servers
	dir     string
	repo    string
	netns   string
	ports   map[string]int
	targets map[string]string
	counter map[string]*counter
}

func (s *servers) newUpstreams(ctx context.Context, dir, repo string) (*upstreams, error) {
	u := &upstreams{srv: s, dir: dir, repo: "bench/" + repo, ports: map[string]int{}, counter: map[string]*counter{},
		targets: map[string]string{"URL poll": s.urlSrv, "OCI poll": s.regFront, "status": s.statusSrv, "remote write": s.writeSrv}}
	for _, f := range features {
		p, err := kit.FreePort()
		if err != nil {
			return nil, err
		}
		u.ports[f] = p
		u.counter[f] = &counter{}
	}
	// The registry as tug sees it: https://127.0.0.1:PORT, its CA trusted
	// through the certs.d layout.
	host := fmt.Sprintf("127.0.0.1:%d", u.ports["OCI poll"])
	hostsDir := filepath.Join(dir, "certs.d", host)
	if err := os.MkdirAll(hostsDir, 0o755); err != nil {
		return nil, err
	}
	toml := fmt.Sprintf("server = \"https://%s\"\n\n[host.\"https://%s\"]\n  capabilities = [\"pull\", \"resolve\"]\n  ca = %q\n", host, host, s.caFile)
	if err := os.WriteFile(filepath.Join(hostsDir, "hosts.toml"), []byte(toml), 0o644); err != nil {
		return nil, err
	}
	return u, u.pushBundle(ctx, 1)
}

// pushBundle pushes version v of the OCI bundle (pods oci-0 to oci-(v-1))
// to the registry directly, not through the proxy: a push is not the
// device's.
func (u *upstreams) pushBundle(ctx context.Context, v int) error {
	var b strings.Builder
	for i := range v {
		if i > 0 {
			b.WriteString("---\n")
		}
		b.WriteString(kit.SleepPod(fmt.Sprintf("oci-%d", i), "docker.io/library/busybox:1.35", "IfNotPresent"))
	}
	body, err := bundle.SealEnvelope(u.srv.priv, bundle.EnvelopeHeader{Version: uint64(v), NotAfter: time.Now().Add(7 * 24 * time.Hour)}, []byte(b.String()))
	if err != nil {
		return err
	}
	a, err := bundle.BuildArtifact(body, "bundle.yaml", time.Now())
	if err != nil {
		return err
	}
	r := docker.NewResolver(docker.ResolverOptions{Hosts: docker.ConfigureDefaultRegistries(docker.WithPlainHTTP(docker.MatchLocalhost))})
	return bundle.PushArtifact(ctx, r, u.srv.registry+"/"+u.repo+":prod", a)
}

// args are tug's flags for its upstreams.
func (u *upstreams) args() []string {
	at := func(f string) string { return fmt.Sprintf("https://127.0.0.1:%d", u.ports[f]) }
	return []string{
		"--manifest-url", at("URL poll") + "/bundle", "--manifest-url-ca", u.srv.caFile,
		"--manifest-oci", fmt.Sprintf("127.0.0.1:%d/%s:prod", u.ports["OCI poll"], u.repo),
		"--registry-config-dir", filepath.Join(u.dir, "certs.d"),
		"--manifest-verify-key", u.srv.pubFile,
		"--status-url", at("status") + "/status", "--status-url-ca", u.srv.caFile,
		"--metrics-remote-write-url", at("remote write") + "/api/v1/write",
	}
}

// listen starts the proxies in netns and the iptables counters of their
// streams there.
func (u *upstreams) listen(ctx context.Context, netns string) error {
	u.netns = netns
	for _, f := range features {
		l, err := kit.ListenIn(netns, u.ports[f])
		if err != nil {
			return err
		}
		go func() { <-ctx.Done(); l.Close() }()
		go proxy(l, u.targets[f], u.counter[f])
		for _, m := range []string{"--dport", "--sport"} {
			if err := u.iptables("-A", "OUTPUT", "-p", "tcp", m, strconv.Itoa(u.ports[f])); err != nil {
				return err
			}
		}
	}
	return nil
}

func (u *upstreams) iptables(args ...string) error {
	out, err := exec.Command("ip", append([]string{"netns", "exec", u.netns, "iptables"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("iptables %s in %s: %w: %s", strings.Join(args, " "), u.netns, err, out)
	}
	return nil
}

// reset zeroes the counters.
func (u *upstreams) reset() {
	for _, c := range u.counter {
		c.up.Store(0)
		c.down.Store(0)
		c.conns.Store(0)
	}
	for _, n := range u.srv.requests {
		n.Store(0)
	}
	_ = u.iptables("-Z", "OUTPUT")
}

// read returns the counts of each feature since the last reset.
func (u *upstreams) read() map[string]counts {
	ip := u.ipBytes()
	out := map[string]counts{}
	for _, f := range features {
		c := u.counter[f]
		n := int64(-1)
		if ip != nil {
			n = ip[u.ports[f]]
		}
		out[f] = counts{up: c.up.Load(), down: c.down.Load(), conns: c.conns.Load(), ipBytes: n, requests: u.srv.requests[f].Load()}
	}
	return out
}

// ipBytes reads the iptables counters: bytes by port (both directions).
func (u *upstreams) ipBytes() map[int]int64 {
	out, err := exec.Command("ip", "netns", "exec", u.netns, "iptables", "-L", "OUTPUT", "-v", "-x", "-n").Output()
	if err != nil {
		return nil
	}
	m := map[int]int64{}
	for _, line := range strings.Split(string(out), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		b, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			continue
		}
		for _, f := range fields {
			for _, p := range []string{"dpt:", "spt:"} {
				if port, ok := strings.CutPrefix(f, p); ok {
					if n, err := strconv.Atoi(port); err == nil {
						m[n] += b
					}
				}
			}
		}
	}
	return m
}

// proxy forwards each connection of l to target, counting.
func proxy(l net.Listener, target string, c *counter) {
	for {
		in, err := l.Accept()
		if err != nil {
			return
		}
		c.conns.Add(1)
		// No keep-alive probes from the proxy's side: servers differ in
		// theirs; the IP-level count holds tug's own.
		if tc, ok := in.(*net.TCPConn); ok {
			_ = tc.SetKeepAlive(false)
		}
		go func() {
			defer in.Close()
			out, err := net.Dial("tcp", target)
			if err != nil {
				return
			}
			defer out.Close()
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = io.Copy(countingWriter{out, &c.up}, in)
				_ = out.(*net.TCPConn).CloseWrite()
			}()
			_, _ = io.Copy(countingWriter{in, &c.down}, out)
			if tc, ok := in.(*net.TCPConn); ok {
				_ = tc.CloseWrite()
			}
			wg.Wait()
		}()
	}
}

// countingWriter counts as it writes (a long-lived connection's bytes are
// counted as they pass, not when it closes).
type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}
