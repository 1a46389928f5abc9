// Command benchoci measures what polling for a bundle costs on the wire
// ("make bench"): N devices' OCI sources (--manifest-oci) against one
// docker-registry, beside N devices' URL sources (--manifest-url) against
// an HTTP server serving the same signed bundle with an ETag, in the same
// run. Each device is one source of package source itself (its own
// resolver or HTTP client, its own connections), polling every -period;
// after the first pull, an OCI poll is one HEAD of the tag and a URL poll
// one conditional GET answered 304 Not Modified.
//
//	go run ./bench/benchoci [-devices 100] [-period 2s] [-window 60s] [-pods 10] [-keep] [-markdown]
//
// Bytes are counted at a TCP proxy in front of each server, both
// directions, HTTP headers included (TCP/IP overhead and handshakes not);
// requests are counted at the proxy's side of the servers: the registry's
// access log is off, so each request line seen on the proxied stream
// counts. The figures are then scaled to a device-hour at one poll a
// minute (--oci-check-frequency's default; --http-check-frequency's is
// 20 s, so at defaults a URL device polls 3 times as often). It needs
// docker-registry on PATH, no root and no containerd. It exits 0 whatever
// the figures: it is a measurement. docs/benchmarks.md holds measured
// numbers.
package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/containerd/containerd/v2/core/remotes/docker"

	"tug/bench/internal/kit"
	"tug/internal/bundle"
	"tug/internal/pod"
	"tug/internal/podview"
	"tug/internal/source"
)

type options struct {
	devices  int
	period   time.Duration
	window   time.Duration
	pods     int
	keep     bool
	markdown bool
}

func main() {
	var o options
	flag.IntVar(&o.devices, "devices", 100, "devices polling each source kind")
	flag.DurationVar(&o.period, "period", 2*time.Second, "poll period of every device (scaled to 1 min in the report)")
	flag.DurationVar(&o.window, "window", 60*time.Second, "window measured, after every device's first pull")
	flag.IntVar(&o.pods, "pods", 10, "pods in the bundle")
	flag.BoolVar(&o.keep, "keep", false, "keep the work directory")
	flag.BoolVar(&o.markdown, "markdown", false, "print markdown tables")
	flag.Parse()
	kit.Run("benchoci", o.check(), func(ctx context.Context) error { return run(ctx, o) })
}

func (o options) check() error {
	var errs []error
	if o.devices < 1 || o.devices > 1000 {
		errs = append(errs, errors.New("-devices: from 1 to 1000"))
	}
	if o.period < 100*time.Millisecond {
		errs = append(errs, errors.New("-period: at least 100ms"))
	}
	if o.window < 5*o.period {
		errs = append(errs, errors.New("-window: at least 5 periods"))
	}
	if _, err := exec.LookPath("docker-registry"); err != nil {
		errs = append(errs, errors.New("docker-registry is not on PATH (apt-get install docker-registry)"))
	}
	return errors.Join(errs...)
}

// counter counts what crossed a proxy: bytes each way, and requests (the
// request lines seen going upstream).
type counter struct {
	up, down, requests atomic.Int64
}

func (c *counter) reset() { c.up.Store(0); c.down.Store(0); c.requests.Store(0) }

// requestCounter counts the HTTP request lines in a client-to-server
// stream (methods at the start of a line).
type requestCounter struct {
	c    *counter
	prev byte
}

var methods = [][]byte{[]byte("GET "), []byte("HEAD "), []byte("PUT "), []byte("POST "), []byte("PATCH ")}

func (r *requestCounter) Write(p []byte) (int, error) {
	r.c.up.Add(int64(len(p)))
	for i := range p {
		if (i == 0 && (r.prev == '\n' || r.prev == 0)) || (i > 0 && p[i-1] == '\n') {
			for _, m := range methods {
				if bytes.HasPrefix(p[i:], m) {
					r.c.requests.Add(1)
				}
			}
		}
	}
	if len(p) > 0 {
		r.prev = p[len(p)-1]
	}
	return len(p), nil
}

type downCounter struct{ c *counter }

func (d downCounter) Write(p []byte) (int, error) { d.c.down.Add(int64(len(p))); return len(p), nil }

// proxy relays 127.0.0.1:<free port> to target and counts.
func proxy(ctx context.Context, target string, c *counter) (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	go func() { <-ctx.Done(); l.Close() }()
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer in.Close()
				out, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer out.Close()
				done := make(chan struct{})
				go func() {
					io.Copy(io.MultiWriter(out, &requestCounter{c: c}), in)
					out.(*net.TCPConn).CloseWrite()
					close(done)
				}()
				io.Copy(io.MultiWriter(in, downCounter{c}), out)
				in.(*net.TCPConn).CloseWrite()
				<-done
			}()
		}
	}()
	return l.Addr().String(), nil
}

// registry starts a docker-registry with storage in dir on a free port.
func registry(ctx context.Context, dir string) (string, *exec.Cmd, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr := l.Addr().String()
	l.Close()
	cfg := filepath.Join(dir, "registry.yml")
	if err := os.WriteFile(cfg, []byte("version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: "+
		filepath.Join(dir, "storage")+"\nhttp:\n  addr: "+addr+"\n"), 0o600); err != nil {
		return "", nil, err
	}
	cmd := exec.CommandContext(ctx, "docker-registry", "serve", cfg)
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	for range 100 {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return addr, cmd, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	return "", nil, fmt.Errorf("docker-registry on %s did not listen", addr)
}

// signedBundle is a signed bundle of n pods, and its verify key.
func signedBundle(n int) ([]byte, ed25519.PublicKey, error) {
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		return nil, nil, err
	}
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString("---\n")
		}
		b.WriteString(kit.SleepPod(fmt.Sprintf("bench-%d", i), "docker.io/library/busybox:1.35", "IfNotPresent"))
	}
	body, err := bundle.SealEnvelope(priv, bundle.EnvelopeHeader{Version: 1, NotAfter: time.Now().Add(24 * time.Hour)}, []byte(b.String()))
	return body, pub, err
}

// readySink counts the sources that have reported content.
type readySink struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (s *readySink) Set(src string, ms []pod.SourceFile) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(ms) == 1 && ms[0].Err == nil && len(ms[0].Pods) > 0 {
		s.seen[src] = true
	}
}

func (s *readySink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}

// polls sums the polls the sources made (pulls and unchanged polls).
func polls(sts []func() podview.FetchStatus) (n int64, errs int) {
	for _, st := range sts {
		s := st()
		n += s.FullResponses + s.NotModified
		if s.Error != "" {
			errs++
		}
	}
	return n, errs
}

func run(ctx context.Context, o options) (err error) {
	dir, err := kit.WorkDir("benchoci")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, kit.RemoveWorkDir("benchoci", dir, o.keep)) }()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	body, pub, err := signedBundle(o.pods)
	if err != nil {
		return err
	}
	regAddr, regCmd, err := registry(ctx, dir)
	if err != nil {
		return err
	}
	defer func() { cancel(); regCmd.Wait() }()
	var ociC, urlC counter
	ociAddr, err := proxy(ctx, regAddr, &ociC)
	if err != nil {
		return err
	}
	ref := ociAddr + "/tug/bench:prod"
	a, err := bundle.BuildArtifact(body, "bench.yaml", time.Now())
	if err != nil {
		return err
	}
	pushR := docker.NewResolver(docker.ResolverOptions{Hosts: docker.ConfigureDefaultRegistries(docker.WithPlainHTTP(docker.MatchLocalhost))})
	if err := bundle.PushArtifact(ctx, pushR, ref, a); err != nil {
		return err
	}
	ociC.reset() // the push is not a device's

	etag := `"` + a.Layer.Digest.Encoded()[:16] + `"`
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", etag)
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Write(body)
	})}
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go srv.Serve(hl)
	defer srv.Close()
	urlAddr, err := proxy(ctx, hl.Addr().String(), &urlC)
	if err != nil {
		return err
	}

	// The devices: one source each, with its own resolver or client.
	sink := &readySink{seen: map[string]bool{}}
	var ociSt, urlSt []func() podview.FetchStatus
	var wg sync.WaitGroup
	defer wg.Wait()
	for i := range o.devices {
		host := fmt.Sprintf("dev%d", i)
		r := docker.NewResolver(docker.ResolverOptions{Hosts: docker.ConfigureDefaultRegistries(docker.WithPlainHTTP(docker.MatchLocalhost))})
		oci, err := source.NewOCI(source.OCIConfig{Ref: ref, Resolver: r, Period: o.period, VerifyKeys: []ed25519.PublicKey{pub}, Hostname: host},
			&prefixSink{sink, host})
		if err != nil {
			return err
		}
		web, err := source.NewHTTP(source.HTTPConfig{URL: "http://" + urlAddr + "/bundle", Period: o.period, VerifyKeys: []ed25519.PublicKey{pub}, Hostname: host},
			&prefixSink{sink, host})
		if err != nil {
			return err
		}
		ociSt, urlSt = append(ociSt, oci.Status), append(urlSt, web.Status)
		for _, s := range []interface{ Run(context.Context) error }{oci, web} {
			wg.Add(1)
			go func() { defer wg.Done(); s.Run(ctx) }()
		}
	}
	deadline := time.Now().Add(time.Minute)
	for sink.count() < 2*o.devices {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d sources took in the bundle within a minute", sink.count(), 2*o.devices)
		}
		if err := kit.Sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "benchoci: %d devices of each kind took in the bundle (%d bytes); measuring %v\n", o.devices, len(body), o.window)
	// The first pulls.
	firstOCIUp, firstOCIDown, firstURLUp, firstURLDown := ociC.up.Load(), ociC.down.Load(), urlC.up.Load(), urlC.down.Load()
	ociC.reset()
	urlC.reset()
	ociP0, _ := polls(ociSt)
	urlP0, _ := polls(urlSt)
	began := time.Now()
	if err := kit.Sleep(ctx, o.window); err != nil {
		return err
	}
	took := time.Since(began)
	ociP1, ociErrs := polls(ociSt)
	urlP1, urlErrs := polls(urlSt)
	cancel()

	type kind struct {
		name            string
		c               *counter
		polls           int64
		errs            int
		firstUp, firstD int64
	}
	kinds := []kind{
		{"OCI (HEAD of the tag)", &ociC, ociP1 - ociP0, ociErrs, firstOCIUp, firstOCIDown},
		{"URL (GET, 304)", &urlC, urlP1 - urlP0, urlErrs, firstURLUp, firstURLDown},
	}
	perHour := func(v int64, polls int64) float64 { // per device-hour at 1 poll/min
		return float64(v) / float64(polls) * 60
	}
	t := kit.Table{Header: []string{"source", "polls", "requests/poll", "bytes/poll up", "bytes/poll down",
		"requests/device-h", "KiB/device-h (both ways)", "first pull, bytes/device", "errors"}, AlignRight: true}
	var both [2]float64
	for i, k := range kinds {
		if k.polls == 0 {
			return fmt.Errorf("%s: no poll in %v", k.name, took)
		}
		up, down, req := k.c.up.Load(), k.c.down.Load(), k.c.requests.Load()
		both[i] = perHour(up+down, k.polls)
		t.Row(k.name, k.polls, fmt.Sprintf("%.2f", float64(req)/float64(k.polls)),
			fmt.Sprintf("%.0f", float64(up)/float64(k.polls)), fmt.Sprintf("%.0f", float64(down)/float64(k.polls)),
			fmt.Sprintf("%.0f", perHour(req, k.polls)), fmt.Sprintf("%.1f", both[i]/1024),
			(k.firstUp+k.firstD)/int64(o.devices), k.errs)
	}
	fmt.Printf("benchoci: %d devices per kind, %d-pod signed bundle of %d bytes, polled every %v over %v; per device-hour at one poll a minute\n",
		o.devices, o.pods, len(body), o.period, took.Round(time.Second))
	if err := t.Write(os.Stdout, o.markdown); err != nil {
		return err
	}
	fmt.Printf("OCI / URL bytes per poll: %.2f\n", both[0]/both[1])
	// At the defaults, a URL device polls every 20 s: 3 times as often.
	fmt.Printf("at the default periods (OCI 1 min, URL 20 s), KiB per device-hour: OCI %.1f, URL %.1f (OCI / URL %.2f)\n",
		both[0]/1024, 3*both[1]/1024, both[0]/(3*both[1]))
	return nil
}

// prefixSink keeps each device's reports apart in one readySink.
type prefixSink struct {
	s      *readySink
	device string
}

func (p *prefixSink) Set(src string, ms []pod.SourceFile) {
	p.s.Set(p.device+" "+src, ms)
}
