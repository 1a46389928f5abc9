// Command benchupstream measures what reporting to a fleet costs ("make
// bench"): two tugs with N one-container pods each run side by side against
// the same containerd, one plain, one pushing its metrics by Prometheus
// remote write (--metrics-push-interval 30s) and its status document to an
// HTTPS receiver (--status-frequency 1m, plus a document on every change).
// Over the same window it reads both tugs' CPU time and, at the end, their
// memory (PSS from /proc/PID/smaps_rollup, RSS beside it): the difference
// is the cost of the upstream reports, the plain tug is the baseline of the
// same run.
//
//	go run ./bench/benchupstream [-pods 30] [-settle 60s] [-window 180s] [-tug ./tug] [-keep] [-markdown]
//
// The receivers are in-process HTTP servers listening inside the reporting
// tug's network namespace (each benchmark tug runs in one of its own); they
// count requests and bytes and answer 204. It needs root and a containerd
// (scripts/testenv.sh up). It prints PASS/FAIL against its targets (under
// +0.3 % of one core, under +5 MiB) and exits 0 whether they are met or
// not: it is a measurement. docs/benchmarks.md holds measured numbers.
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"tug/bench/internal/kit"
)

// The containerd namespaces of the two tugs, and the host names they are
// given.
const (
	plainNS    = "bench-upstream-plain"
	reportNS   = "bench-upstream-report"
	pushEvery  = 30 * time.Second
	statusBeat = time.Minute
)

// Targets: the cost of the reports with 30 pods.
const (
	targetCPU = 0.3 // % of one core, over the plain tug
	targetMem = 5   // MiB of PSS, over the plain tug
)

type options struct {
	kit.Options
	pods   int
	settle time.Duration
	window time.Duration
}

func main() {
	var o options
	o.Flags(flag.CommandLine)
	flag.IntVar(&o.pods, "pods", 30, "number of running one-container pods of each tug")
	flag.DurationVar(&o.settle, "settle", 60*time.Second, "wait after all pods run, before measuring")
	flag.DurationVar(&o.window, "window", 180*time.Second, "window measured (several pushes and heartbeats)")
	flag.Parse()

	err := o.check()
	kit.Run("benchupstream", err, func(ctx context.Context) error { return run(ctx, o) })
}

func (o *options) check() error {
	errs := []error{o.Options.Check()}
	if o.pods < 1 || o.pods > 200 {
		errs = append(errs, errors.New("-pods: from 1 to 200"))
	}
	if o.window < 2*pushEvery {
		errs = append(errs, fmt.Errorf("-window: at least %v (two pushes)", 2*pushEvery))
	}
	return errors.Join(errs...)
}

// receiver counts what one endpoint received.
type receiver struct {
	requests atomic.Int64
	bytes    atomic.Int64
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n, _ := io.Copy(io.Discard, r.Body)
	rc.requests.Add(1)
	rc.bytes.Add(n)
	w.WriteHeader(http.StatusNoContent)
}

// run is one run: both tugs started together, measured over one window.
func run(ctx context.Context, o options) (err error) {
	client, err := kit.Connect(o.Containerd)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, client.Close()) }()

	plainS, err := kit.OpenClient(ctx, "benchupstream", client, o.Options, plainNS)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, plainS.Close()) }()
	reportS, err := kit.OpenClient(ctx, "benchupstream", client, o.Options, reportNS)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, reportS.Close()) }()

	// The reporting tug's network namespace exists once it starts; its
	// reports retry with back-off until the receivers listen there.
	var metrics, status receiver
	mport, sport, err := freePorts()
	if err != nil {
		return err
	}
	caFile := filepath.Join(reportS.Dir, "status-ca.pem")
	cert, err := selfSigned(caFile)
	if err != nil {
		return err
	}
	plain, err := plainS.NewTug(ctx, kit.TugConfig{Hostname: "plain", Healthz: true, Netns: "upplain"})
	if err != nil {
		return err
	}
	report, err := reportS.NewTug(ctx, kit.TugConfig{Bin: plain.Bin, Hostname: "report", Healthz: true, Netns: "upreport", Args: []string{
		"--metrics-remote-write-url", fmt.Sprintf("http://127.0.0.1:%d/api/v1/write", mport),
		"--metrics-push-interval", pushEvery.String(),
		"--status-url", fmt.Sprintf("https://127.0.0.1:%d/status", sport),
		"--status-url-ca", caFile,
		"--status-frequency", statusBeat.String(),
	}})
	if err != nil {
		return err
	}
	for _, t := range []*kit.Tug{plain, report} {
		if err := t.WriteSleepPods("up", o.pods, o.Image, ""); err != nil {
			return err
		}
		if err := t.AddImage(o.Archive); err != nil {
			return err
		}
	}
	if err := plain.Start(); err != nil {
		return err
	}
	if err := report.Start(); err != nil {
		return err
	}
	netns, err := report.NetnsName()
	if err != nil {
		return err
	}
	stop, err := serve(netns, mport, sport, cert, &metrics, &status)
	if err != nil {
		return err
	}
	defer stop()

	fmt.Fprintf(os.Stderr, "benchupstream: tugs started (plain pid %d, reporting pid %d); waiting for %d pods each\n", plain.PID(), report.PID(), o.pods)
	for _, t := range []*kit.Tug{plain, report} {
		if err := t.WaitPods(ctx, o.pods, 4*time.Minute, kit.AllRunning(1)); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "benchupstream: all pods running; settling %v\n", o.settle)
	if err := kit.Sleep(ctx, o.settle); err != nil {
		return err
	}
	if metrics.requests.Load() == 0 || status.requests.Load() == 0 {
		return fmt.Errorf("the reporting tug sent nothing during start-up and settling (remote write %d, status %d requests): check its log %s",
			metrics.requests.Load(), status.requests.Load(), report.LogPath)
	}
	m0, s0 := snapshot(&metrics), snapshot(&status)
	win, err := kit.StartCPU(
		kit.ProcSet{Name: "tug (plain)", PIDs: []int{plain.PID()}},
		kit.ProcSet{Name: "tug (reporting)", PIDs: []int{report.PID()}},
	)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "benchupstream: measuring %v\n", o.window)
	if err := kit.Sleep(ctx, o.window); err != nil {
		return err
	}
	usage, window, err := win.Stop()
	if err != nil {
		return err
	}
	for _, t := range []*kit.Tug{plain, report} {
		if t.Exited() {
			return fmt.Errorf("tug exited during the window: %w", t.Alive())
		}
	}
	var mem [2]kit.Memory
	for i, u := range usage {
		if mem[i], err = kit.SumMemory(u.Set.PIDs); err != nil {
			return fmt.Errorf("%s: %w", u.Set.Name, err)
		}
	}
	m1, s1 := snapshot(&metrics), snapshot(&status)
	printReport(os.Stdout, o, window, usage, mem, m1.sub(m0), s1.sub(s0))
	return nil
}

type counts struct{ requests, bytes int64 }

func snapshot(r *receiver) counts { return counts{r.requests.Load(), r.bytes.Load()} }
func (c counts) sub(o counts) counts {
	return counts{c.requests - o.requests, c.bytes - o.bytes}
}

func printReport(w io.Writer, o options, window time.Duration, usage []kit.Usage, mem [2]kit.Memory, metrics, status counts) {
	fmt.Fprintf(w, "\nbenchupstream: two tugs with %d pods each, %v window after %v of settling; the reporting one pushes metrics every %v and a status heartbeat every %v\n\n",
		o.pods, window.Round(time.Millisecond), o.settle, pushEvery, statusBeat)
	t := kit.Table{Header: []string{"tug", "CPU (% of one core)", "RSS (MiB)", "PSS (MiB)"}}
	for i, u := range usage {
		t.Row(u.Set.Name, fmt.Sprintf("%.3f%%", u.Percent), fmt.Sprintf("%.1f", kit.MiB(mem[i].RSS)), fmt.Sprintf("%.1f", kit.MiB(mem[i].PSS)))
	}
	t.Write(w, o.Markdown)
	fmt.Fprintf(w, "\nreceived in the window: remote write %d requests, %d bytes; status %d documents, %d bytes\n",
		metrics.requests, metrics.bytes, status.requests, status.bytes)
	dcpu := usage[1].Percent - usage[0].Percent
	dpss := kit.MiB(mem[1].PSS) - kit.MiB(mem[0].PSS)
	fmt.Fprintf(w, "reports' CPU: %+.3f%% of one core (target < +%g%%)  %s\n", dcpu, targetCPU, kit.Verdict(dcpu < targetCPU))
	fmt.Fprintf(w, "reports' memory: %+.1f MiB PSS (target < +%d MiB)  %s  (RSS %+.1f MiB)\n", dpss, targetMem, kit.Verdict(dpss < targetMem),
		kit.MiB(mem[1].RSS)-kit.MiB(mem[0].RSS))
	fmt.Fprintf(w, "reporting / plain, same run: CPU %s, PSS %s\n",
		kit.RatioString(usage[1].Percent, usage[0].Percent), kit.RatioString(float64(mem[1].PSS), float64(mem[0].PSS)))
}

// freePorts picks two ports free on the host's loopback; the reporting
// tug's network namespace is new, so they are free there too.
func freePorts() (int, int, error) {
	var ports [2]int
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, 0, err
		}
		ports[i] = l.Addr().(*net.TCPAddr).Port
		defer l.Close()
	}
	return ports[0], ports[1], nil
}

// serve starts the remote-write receiver (plain HTTP) and the status
// receiver (HTTPS with cert) on listeners made inside the network
// namespace netns, and returns what stops them.
func serve(netns string, mport, sport int, cert tls.Certificate, metrics, status *receiver) (func(), error) {
	ml, err := kit.ListenIn(netns, mport)
	if err != nil {
		return nil, err
	}
	sl, err := kit.ListenIn(netns, sport)
	if err != nil {
		ml.Close()
		return nil, err
	}
	msrv := &http.Server{Handler: metrics}
	ssrv := &http.Server{Handler: status, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
	go func() { _ = msrv.Serve(ml) }()
	go func() { _ = ssrv.ServeTLS(sl, "", "") }()
	return func() { msrv.Close(); ssrv.Close() }, nil
}

// selfSigned makes the status receiver's certificate for 127.0.0.1 and
// writes it, PEM, to caFile: the reporting tug's --status-url-ca.
func selfSigned(caFile string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "benchupstream status receiver"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
