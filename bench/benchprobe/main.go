// Command benchprobe measures what probes cost tug ("make bench"): it
// starts tug with N pods, each running a busybox httpd, measures
// tug's CPU over a window and its memory at the end, then adds three
// probes per pod (httpGet readiness and tcpSocket liveness on its web
// server, exec readiness on its second container) at periodSeconds 1, which re-arms them
// without restarting a container (probes are not part of a container's
// hash), waits for them to settle and measures the same window again. The
// two windows are of the same run, the same pods and the same tug: the
// difference is the probes'. A second probe round with the exec probe
// left out gives the http/tcp cost alone; the exec probe's cost is shown
// separately (it is mostly containerd's and runc's).
//
//	go run ./bench/benchprobe [-pods 30] [-settle 5s] [-window 60s] [-tug ./tug] [-keep] [-markdown]
//
// Probe latency (a probe's due time to its result recorded) comes from
// tug's tug_prober_probe_latency_seconds histogram when tug's API serves
// /metrics; without it the latency is reported as not available. It needs
// root and a containerd (scripts/testenv.sh up). It exits 0 whether the
// targets are met or not: it is a measurement.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"tug/bench/internal/kit"
)

const (
	namespace = "bench-probe"
	hostname  = "bench"
)

// Targets of the http/tcp probes.
const (
	targetCPU     = 2.0 // % of one core added
	targetRSS     = 5   // MiB added
	targetLatency = 20 * time.Millisecond
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
	flag.IntVar(&o.pods, "pods", 30, "number of pods")
	flag.DurationVar(&o.settle, "settle", 5*time.Second, "wait after each change, before measuring")
	flag.DurationVar(&o.window, "window", 60*time.Second, "window measured, per phase")
	flag.Parse()
	err := o.Options.Check()
	if err == nil && (o.pods < 1 || o.pods > 200) {
		err = errors.New("-pods: from 1 to 200")
	}
	kit.Run("benchprobe", err, func(ctx context.Context) error { return run(ctx, o) })
}

// The probes of one phase, as container lines of the manifest.
const (
	netProbes = `      readinessProbe:
        httpGet: {path: /index.html, port: 8080}
        periodSeconds: 1
      livenessProbe:
        tcpSocket: {port: 8080}
        periodSeconds: 1
`
	execProbe = `      readinessProbe:
        exec: {command: ["true"]}
        periodSeconds: 1
`
)

// phase is one measured window.
type phase struct {
	name       string
	main, side string // container lines of each container
}

type sample struct {
	phase   string
	cpu     float64 // % of one core
	mem     kit.Memory
	latency map[string]latency // by handler
	window  time.Duration
}

// latency is the distribution of one handler's probes in one window.
// p50 and p99 are interpolated linearly inside the bucket that holds
// them, as Prometheus' histogram_quantile does; p99Bound is the upper
// bound of that bucket, the figure the verdict uses (it cannot be below
// the true p99). All in seconds; NaN: not available.
type latency struct {
	p50, p99, p99Bound float64
	n                  float64
}

func run(ctx context.Context, o options) (err error) {
	s, err := kit.Open(ctx, "benchprobe", o.Options, namespace)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.Close()) }()
	client := s.Client
	tug, err := s.NewTug(ctx, kit.TugConfig{Hostname: hostname, Healthz: true, Netns: "probe"})
	if err != nil {
		return err
	}
	if err := writeManifests(o, tug, "", ""); err != nil {
		return err
	}
	if err := tug.AddImage(o.Archive); err != nil {
		return err
	}
	if err := tug.Start(); err != nil {
		return err
	}
	if err := tug.WaitPods(ctx, o.pods, 3*time.Minute, kit.AllRunning(2)); err != nil {
		return err
	}
	pids, err := kit.TaskPIDs(ctx, client, namespace)
	if err != nil {
		return err
	}
	// Phases: none (the baseline), http+tcp, http+tcp+exec. A probe
	// phase's latency counts the probes of its window only.
	var samples []sample
	for _, ph := range []phase{{"no probes", "", ""}, {"http+tcp", netProbes, ""}, {"http+tcp+exec", netProbes, execProbe}} {
		if err := writeManifests(o, tug, ph.main, ph.side); err != nil {
			return err
		}
		if err := kit.Sleep(ctx, o.settle+3*time.Second); err != nil { // the file check, then the re-arm
			return err
		}
		before := scrape(ctx, tug)
		fmt.Fprintf(os.Stderr, "benchprobe: measuring %q for %v\n", ph.name, o.window)
		win, err := kit.StartCPU(kit.ProcSet{Name: "tug", PIDs: []int{tug.PID()}})
		if err != nil {
			return err
		}
		if err := kit.Sleep(ctx, o.window); err != nil {
			return err
		}
		usage, window, err := win.Stop()
		if err != nil {
			return err
		}
		mem, err := kit.ReadMemory(tug.PID())
		if err != nil {
			return err
		}
		after := scrape(ctx, tug)
		samples = append(samples, sample{phase: ph.name, cpu: usage[0].Percent, mem: mem, latency: diffP99(before, after), window: window})
	}
	now, err := kit.TaskPIDs(ctx, client, namespace)
	if err != nil {
		return err
	}
	for id, pid := range pids {
		if now[id] != pid {
			return fmt.Errorf("task %s was restarted during the run (pid %d, now %d): probes must not restart healthy containers", id, pid, now[id])
		}
	}
	report(os.Stdout, o, samples)
	return nil
}

// writeManifests writes the pods: "main" serves HTTP on 8080 (probed by
// httpGet and tcpSocket), "side" sleeps (probed by exec: a readiness
// probe runs for good, where a startup probe would stop at its first
// success).
func writeManifests(o options, tug *kit.Tug, mainProbes, sideProbes string) error {
	for i := range o.pods {
		name := fmt.Sprintf("probe-%02d", i)
		m := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: 0
  containers:
    - name: main
      image: %s
      command: ["sh", "-c", "mkdir -p /www && echo ok > /www/index.html && exec httpd -f -p 8080 -h /www"]
%s    - name: side
      image: %s
      command: ["sleep", "86400"]
%s`, name, o.Image, mainProbes, o.Image, sideProbes)
		tmp := filepath.Join(tug.Staging, name+".yaml")
		if err := os.WriteFile(tmp, []byte(m), 0o644); err != nil {
			return err
		}
		if err := os.Rename(tmp, filepath.Join(tug.Manifests, name+".yaml")); err != nil {
			return err
		}
	}
	return nil
}

// histogram is the cumulative buckets of one handler: le -> count.
type histogram map[float64]float64

// scrape reads tug_prober_probe_latency_seconds from GET /metrics on tug's
// API socket; nil when tug does not serve it.
func scrape(ctx context.Context, tug *kit.Tug) map[string]histogram {
	sock := filepath.Join(tug.RunDir, "tug.sock")
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}, Timeout: 5 * time.Second}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://tug/metrics", nil)
	resp, err := c.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil
	}
	out := map[string]histogram{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "tug_prober_probe_latency_seconds_bucket{") {
			continue
		}
		labels, value, ok := strings.Cut(strings.TrimPrefix(line, "tug_prober_probe_latency_seconds_bucket{"), "} ")
		if !ok {
			continue
		}
		var handler, le string
		for _, kv := range strings.Split(labels, ",") {
			k, v, _ := strings.Cut(kv, "=")
			v = strings.Trim(v, `"`)
			switch k {
			case "handler":
				handler = v
			case "le":
				le = v
			}
		}
		bound, err1 := strconv.ParseFloat(le, 64)
		n, err2 := strconv.ParseFloat(value, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		if out[handler] == nil {
			out[handler] = histogram{}
		}
		out[handler][bound] = n
	}
	return out
}

// diffP99 returns, per handler, the latency of the probes between two
// scrapes.
func diffP99(before, after map[string]histogram) map[string]latency {
	out := map[string]latency{}
	for handler, h := range after {
		var bounds []float64
		for b := range h {
			bounds = append(bounds, b)
		}
		sort.Float64s(bounds)
		counts := make([]float64, len(bounds))
		for i, b := range bounds {
			counts[i] = h[b] - before[handler][b]
		}
		l := latency{n: counts[len(counts)-1]}
		l.p50, _ = quantile(0.50, bounds, counts)
		l.p99, l.p99Bound = quantile(0.99, bounds, counts)
		out[handler] = l
	}
	return out
}

// quantile returns the q-quantile of cumulative bucket counts (bounds
// ascending, the last +Inf), interpolated linearly inside its bucket
// (whose lower bound is the previous bucket's, 0 for the first), and the
// upper bound of that bucket. NaN when there are no observations or the
// quantile lies in the +Inf bucket.
func quantile(q float64, bounds, counts []float64) (value, bound float64) {
	if len(counts) == 0 || counts[len(counts)-1] <= 0 {
		return math.NaN(), math.NaN()
	}
	rank := q * counts[len(counts)-1]
	lower, below := 0.0, 0.0
	for i, b := range bounds {
		if counts[i] >= rank {
			if math.IsInf(b, 1) {
				return math.NaN(), math.NaN()
			}
			if in := counts[i] - below; in > 0 {
				return lower + (b-lower)*(rank-below)/in, b
			}
			return b, b
		}
		lower, below = b, counts[i]
	}
	return math.NaN(), math.NaN()
}

func report(w io.Writer, o options, s []sample) {
	fmt.Fprintf(w, "\nbenchprobe: %d pods, probes at periodSeconds 1, %v per phase, same tug and pods\n\n", o.pods, o.window)
	t := kit.Table{Header: []string{"phase", "probes/s", "tug CPU (% of one core)", "RSS (MiB)", "PSS (MiB)", "p99 http", "p99 tcp", "p99 exec"}}
	perPod := []int{0, 2, 3}
	for i, x := range s {
		t.Row(x.phase, perPod[i]*o.pods, fmt.Sprintf("%.3f%%", x.cpu), fmt.Sprintf("%.1f", kit.MiB(x.mem.RSS)), fmt.Sprintf("%.1f", kit.MiB(x.mem.PSS)),
			p99(x.latency, "httpGet"), p99(x.latency, "tcpSocket"), p99(x.latency, "exec"))
	}
	t.Write(w, o.Markdown)
	base, net, all := s[0], s[1], s[2]
	dCPU := net.cpu - base.cpu
	dRSS := kit.MiB(net.mem.RSS - base.mem.RSS)
	dPSS := kit.MiB(net.mem.PSS - base.mem.PSS)
	fmt.Fprintln(w)
	fmt.Fprintf(w, "http+tcp probes add %.3f%% of one core (target < %g%%)  %s  (ratio to the same run's baseline: %s)\n", dCPU, targetCPU, kit.Verdict(dCPU < targetCPU), kit.RatioString(net.cpu, base.cpu))
	fmt.Fprintf(w, "http+tcp probes add %.1f MiB RSS (target < %d MiB)  %s, %.1f MiB PSS  %s\n", dRSS, targetRSS, kit.Verdict(dRSS < targetRSS), dPSS, kit.Verdict(dPSS < targetRSS))
	for _, h := range []string{"httpGet", "tcpSocket"} {
		if l, ok := net.latency[h]; ok && !math.IsNaN(l.p99) {
			bound := seconds(l.p99Bound)
			fmt.Fprintf(w, "%s probe latency p50 %v, p99 %v (in the bucket <= %v) over %.0f probes (target < %v)  %s\n",
				h, seconds(l.p50), seconds(l.p99), bound, l.n, targetLatency, kit.Verdict(bound < targetLatency))
		} else {
			fmt.Fprintf(w, "%s probe latency: not available (tug serves no /metrics with tug_prober_probe_latency_seconds)\n", h)
		}
	}
	fmt.Fprintf(w, "exec probes (reported apart; their cost is containerd's exec): tug %+.3f%% of one core over http+tcp, %s\n", all.cpu-net.cpu, p99(all.latency, "exec"))
}

func p99(l map[string]latency, h string) string {
	x, ok := l[h]
	if !ok || math.IsNaN(x.p99) {
		return "n/a"
	}
	return fmt.Sprintf("%v (<= %v)", seconds(x.p99), seconds(x.p99Bound))
}

// seconds shows a figure in seconds as a duration rounded to 0.1 ms.
func seconds(s float64) time.Duration {
	return time.Duration(s * float64(time.Second)).Round(100 * time.Microsecond)
}
