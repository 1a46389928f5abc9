// Command benchday2 measures what tug's day-2 machinery costs at rest
// ("make bench"): it starts tug with N one-container pods (busybox sleep),
// waits until all run and the start-up has settled, then measures tug's
// CPU over alternating windows of the same run:
//
//   - idle: nothing asks tug anything (the baseline);
//   - scrape: GET /metrics every -scrape-every (15 s, Prometheus' default),
//     so the metrics collector (status gauges, per-container cgroup reads)
//     runs as under a real scraper;
//
// and, when -eviction-args is given, the same two with tug restarted with
// those flags (the eviction manager's, e.g. "--eviction-hard=memory.available<100Mi";
// the restart adopts the pods), so that its cost is measured in the same
// run too. The baseline tug runs with -baseline-args, by default
// "--eviction-hard=none --image-gc-high-threshold=100": no eviction
// manager pass observes anything and no image GC runs, so the idle
// baseline is tug without the day-2 reclaim. It then times a burst of /metrics scrapes at N pods (target
// under 20 ms) and reports tug's PSS (/proc/PID/smaps_rollup).
//
//	go run ./bench/benchday2 [-pods 30] [-settle 10s] [-window 60s] [-rounds 2] [-scrape-every 15s] [-baseline-args ARGS] [-eviction-args ARGS] [-tug ./tug] [-keep] [-markdown]
//
// It needs root and a containerd (scripts/testenv.sh up). It prints
// PASS/FAIL against its targets (the added CPU under 1 % of one
// core, the scrape under 20 ms) and exits 0 whether they are met or not.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"tug/bench/internal/kit"
	"tug/internal/pod"
	"tug/internal/podview"
)

const (
	namespace = "bench-day2"
	hostname  = "bench"
)

// Targets of the day-2 components (metrics, eviction, image GC).
const (
	targetCPU    = 1.0                   // % of one core, added by the day-2 components together
	targetScrape = 20 * time.Millisecond // one /metrics at 30 pods
)

type options struct {
	kit.Options
	pods         int
	settle       time.Duration
	window       time.Duration
	rounds       int
	scrapeEvery  time.Duration
	scrapes      int
	baselineArgs string
	evictionArgs string
}

func main() {
	var o options
	o.Flags(flag.CommandLine)
	flag.IntVar(&o.pods, "pods", 30, "number of running one-container pods")
	flag.DurationVar(&o.settle, "settle", 10*time.Second, "wait after all pods run (and after a restart), before measuring")
	flag.DurationVar(&o.window, "window", 60*time.Second, "length of each measured window")
	flag.IntVar(&o.rounds, "rounds", 2, "idle/scrape window pairs per configuration (alternating, to spread drift)")
	flag.DurationVar(&o.scrapeEvery, "scrape-every", 15*time.Second, "scrape interval in the scrape windows")
	flag.IntVar(&o.scrapes, "scrapes", 50, "scrapes of the timing burst")
	flag.StringVar(&o.baselineArgs, "baseline-args", "--eviction-hard=none --image-gc-high-threshold=100", "flags of the baseline tug (space-separated): by default no eviction manager and no image GC")
	flag.StringVar(&o.evictionArgs, "eviction-args", "", "flags that turn the eviction manager on (space-separated); empty: not measured")
	flag.Parse()
	err := o.Check()
	if err == nil && (o.pods < 1 || o.pods > 200 || o.window < time.Second || o.rounds < 1) {
		err = errors.New("-pods 1..200, -window >= 1s, -rounds >= 1")
	}
	kit.Run("benchday2", err, func(ctx context.Context) error { return run(ctx, o) })
}

// config is one way of running tug: its extra flags.
type config struct {
	name string
	args []string
}

// window is one measured window.
type window struct {
	config string
	scrape bool
	cpu    float64 // % of one core
}

func run(ctx context.Context, o options) (err error) {
	s, err := kit.Open(ctx, "benchday2", o.Options, namespace)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.Close()) }()
	configs := []config{{name: "tug", args: strings.Fields(o.baselineArgs)}}
	if o.evictionArgs != "" {
		configs = append(configs, config{name: "tug + eviction", args: strings.Fields(o.evictionArgs)})
	}
	var windows []window
	var scrapeTimes []time.Duration
	var pss int64
	for i, c := range configs {
		if s.Tug != nil {
			if err := s.Tug.Stop(20 * time.Second); err != nil {
				return err
			}
		}
		tug, err := s.NewTug(ctx, kit.TugConfig{Hostname: hostname, Healthz: true, Netns: "day2", Args: c.args})
		if err != nil {
			return err
		}
		if i == 0 {
			if err := tug.WriteSleepPods("day2", o.pods, o.Image, ""); err != nil {
				return err
			}
			if err := tug.AddImage(o.Archive); err != nil {
				return err
			}
		}
		if err := tug.Start(); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "benchday2: %s started (pid %d, log %s)\n", c.name, tug.PID(), tug.LogPath)
		sock := filepath.Join(tug.RunDir, "tug.sock")
		if err := tug.WaitPods(ctx, o.pods, 3*time.Minute, func(v *podview.View) bool { return v.Status.Phase == pod.PhaseRunning }); err != nil {
			return err
		}
		if err := kit.Sleep(ctx, o.settle); err != nil {
			return err
		}
		hc := socketClient(sock)
		for r := range o.rounds {
			// Alternate which comes first, so that a drift does not favour one.
			order := []bool{false, true}
			if r%2 == 1 {
				order = []bool{true, false}
			}
			for _, scrape := range order {
				cpu, err := measure(ctx, o, tug, hc, scrape)
				if err != nil {
					return err
				}
				windows = append(windows, window{config: c.name, scrape: scrape, cpu: cpu})
				fmt.Fprintf(os.Stderr, "benchday2: %s, scrape=%v: %.3f%% of one core\n", c.name, scrape, cpu)
			}
		}
		if i == 0 {
			for range o.scrapes {
				d, err := scrapeOnce(ctx, hc)
				if err != nil {
					return err
				}
				scrapeTimes = append(scrapeTimes, d)
			}
			mem, err := kit.ReadMemory(tug.PID())
			if err != nil {
				return err
			}
			pss = mem.PSS
		}
	}
	report(os.Stdout, o, configs, windows, scrapeTimes, pss)
	return nil
}

// socketClient is an HTTP client over tug's API socket (which serves
// /metrics too).
func socketClient(sock string) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
	}}
}

// scrapeOnce fetches /metrics and returns how long the whole answer took.
func scrapeOnce(ctx context.Context, hc *http.Client) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://tug/metrics", nil)
	if err != nil {
		return 0, err
	}
	began := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("scrape: %w", err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	d := time.Since(began)
	if err != nil || resp.StatusCode != http.StatusOK || n == 0 {
		return 0, fmt.Errorf("scrape: %s, %d bytes, %v", resp.Status, n, err)
	}
	return d, nil
}

// measure runs one window and returns tug's CPU over it; with scrape, it
// scrapes /metrics at the start and every scrapeEvery.
func measure(ctx context.Context, o options, tug *kit.Tug, hc *http.Client, scrape bool) (float64, error) {
	win, err := kit.StartCPU(kit.ProcSet{Name: "tug run", PIDs: []int{tug.PID()}})
	if err != nil {
		return 0, err
	}
	end := time.Now().Add(o.window)
	for time.Now().Before(end) {
		if scrape {
			if _, err := scrapeOnce(ctx, hc); err != nil {
				return 0, err
			}
		}
		step := min(o.scrapeEvery, time.Until(end))
		if step > 0 {
			if err := kit.Sleep(ctx, step); err != nil {
				return 0, err
			}
		}
	}
	usage, _, err := win.Stop()
	if err != nil {
		return 0, err
	}
	if err := tug.Alive(); err != nil {
		return 0, err
	}
	return usage[0].Percent, nil
}

func report(w io.Writer, o options, configs []config, windows []window, scrapes []time.Duration, pss int64) {
	fmt.Fprintf(w, "\nbenchday2: %d pods running, %d x %v windows per case, a scrape every %v in the scrape windows\n\n",
		o.pods, o.rounds, o.window, o.scrapeEvery)
	mean := func(config string, scrape bool) float64 {
		var sum float64
		var n int
		for _, x := range windows {
			if x.config == config && x.scrape == scrape {
				sum += x.cpu
				n++
			}
		}
		return sum / float64(max(n, 1))
	}
	base := mean("tug", false)
	t := kit.Table{Header: []string{"case", "tug CPU (% of one core)", "added vs tug idle", "ratio vs tug idle"}}
	var worst float64
	for _, c := range configs {
		for _, scrape := range []bool{false, true} {
			name := c.name
			if scrape {
				name += ", /metrics every " + o.scrapeEvery.String()
			} else {
				name += ", idle"
			}
			v := mean(c.name, scrape)
			worst = max(worst, v-base)
			t.Row(name, fmt.Sprintf("%.3f%%", v), fmt.Sprintf("%+.3f%%", v-base), kit.RatioString(v, base))
		}
	}
	t.Write(w, o.Markdown)
	slices.Sort(scrapes)
	s := kit.Summarise(scrapes)
	fmt.Fprintln(w)
	fmt.Fprintf(w, "added CPU, worst case: %.3f%% of one core (target < %g%%)  %s\n", worst, targetCPU, kit.Verdict(worst < targetCPU))
	fmt.Fprintf(w, "/metrics at %d pods, %d scrapes: %s (target p50 < %v)  %s\n", o.pods, len(scrapes), s, targetScrape,
		kit.Verdict(kit.Percentile(scrapes, 0.5) < targetScrape))
	fmt.Fprintf(w, "tug PSS after the scrapes: %.1f MiB\n", kit.MiB(pss))
}
