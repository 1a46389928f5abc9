// Command benchlogs compares tug's two container log drivers in one run
// ("make bench"): --container-log-driver=file (the shim writes raw files,
// tug converts them) against =binary (a "tug logger" process per
// container). For each driver it starts a tug
// and measures:
//
//   - throughput: one container writes -mb MB to stdout (lines of 100
//     bytes); the wall time from the first record in the CRI log to the
//     last, and the CPU time of tug, of the container's shim and of its
//     logger over that time;
//
//   - footprint: -pods one-container pods at rest; the PSS (from
//     /proc/PID/smaps_rollup) of tug, of the shims and of the loggers, and
//     tug's CPU over -idle.
//
//     go run ./bench/benchlogs [-mb 100] [-pods 30] [-tug ./tug] [-keep] [-markdown]
//
// It needs root and a containerd (scripts/testenv.sh up). It is a
// measurement: it exits 0 whatever the figures.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	containerd "github.com/containerd/containerd/v2/client"

	"tug/bench/internal/kit"
)

const (
	namespace = "bench-logs"
	hostname  = "bench"
)

var drivers = []string{"binary", "file"}

type options struct {
	kit.Options
	mb   int
	pods int
	idle time.Duration
}

func main() {
	var o options
	o.Flags(flag.CommandLine)
	flag.IntVar(&o.mb, "mb", 100, "megabytes (10^6 bytes) the flooding container writes")
	flag.IntVar(&o.pods, "pods", 30, "pods at rest for the footprint")
	flag.DurationVar(&o.idle, "idle", 30*time.Second, "window over which tug's CPU at rest is measured")
	flag.Parse()
	err := o.Check()
	kit.Run("benchlogs", err, func(ctx context.Context) error { return run(ctx, o) })
}

// result is one driver's figures.
type result struct {
	driver                  string
	wall                    time.Duration
	tugCPU, shimCPU, logCPU time.Duration
	lines                   int
	tugPSS, shimPSS, logPSS int64   // KiB
	tugRSS                  int64   // KiB
	idleCPU                 float64 // tug, % of one core, pods at rest
	shims, loggers          int
}

func run(ctx context.Context, o options) error {
	client, err := kit.Connect(o.Containerd)
	if err != nil {
		return err
	}
	defer client.Close()
	var results []result
	for _, d := range drivers {
		r, err := runDriver(ctx, o, client, d)
		if err != nil {
			return fmt.Errorf("driver %s: %w", d, err)
		}
		results = append(results, r)
	}
	report(os.Stdout, o, results)
	return nil
}

func runDriver(ctx context.Context, o options, client *containerd.Client, driver string) (res result, err error) {
	res.driver = driver
	s, err := kit.OpenClient(ctx, "benchlogs", client, o.Options, namespace)
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, s.Close()) }()
	tug, err := s.NewTug(ctx, kit.TugConfig{Hostname: hostname, Netns: "logs",
		Args: []string{"--container-log-driver", driver, "--container-log-max-size", strconv.Itoa(1 << 30), "--container-log-max-files", "1"},
	})
	if err != nil {
		return res, err
	}
	s.Remove = func(ctx context.Context) error { return removePods(ctx, client, tug) }
	if err := tug.AddImage(o.Archive); err != nil {
		return res, err
	}
	// 99 characters and a newline per line; the sleep lets the
	// measurement start before the output does.
	script := fmt.Sprintf(`sleep 2; yes %s | head -c %d; echo END`, strings.Repeat("x", 99), o.mb*1000*1000)
	if err := writeManifest(tug, "flood", o.Image, []string{"sh", "-c", script}, "Never"); err != nil {
		return res, err
	}
	if err := tug.Start(); err != nil {
		return res, err
	}
	fmt.Fprintf(os.Stderr, "benchlogs: %s driver: tug pid %d, waiting for the flooding pod\n", driver, tug.PID())
	if err := tug.WaitPods(ctx, 1, 2*time.Minute, kit.AllRunning(1)); err != nil {
		return res, err
	}
	if err := throughput(ctx, o, tug, &res); err != nil {
		return res, err
	}
	if err := removePods(ctx, client, tug); err != nil {
		return res, err
	}

	for i := range o.pods {
		if err := writeManifest(tug, fmt.Sprintf("idle-%02d", i), o.Image, []string{"sleep", "86400"}, "Always"); err != nil {
			return res, err
		}
	}
	if err := tug.WaitPods(ctx, o.pods, 3*time.Minute, kit.AllRunning(1)); err != nil {
		return res, err
	}
	if err := kit.Sleep(ctx, 5*time.Second); err != nil {
		return res, err
	}
	win, err := kit.StartCPU(kit.ProcSet{Name: "tug", PIDs: []int{tug.PID()}})
	if err != nil {
		return res, err
	}
	if err := kit.Sleep(ctx, o.idle); err != nil {
		return res, err
	}
	usage, _, err := win.Stop()
	if err != nil {
		return res, err
	}
	res.idleCPU = usage[0].Percent
	shims, loggers, err := tug.Helpers(o.Containerd, namespace)
	if err != nil {
		return res, err
	}
	res.shims, res.loggers = len(shims), len(loggers)
	for _, g := range []struct {
		pids []int
		dst  *int64
	}{{[]int{tug.PID()}, &res.tugPSS}, {shims, &res.shimPSS}, {loggers, &res.logPSS}} {
		m, err := kit.SumMemory(g.pids)
		if err != nil {
			return res, err
		}
		*g.dst = m.PSS
		if g.dst == &res.tugPSS {
			res.tugRSS = m.RSS
		}
	}
	return res, nil
}

// throughput measures the flooding pod: from the first record in its CRI
// log to END.
func throughput(ctx context.Context, o options, tug *kit.Tug, res *result) error {
	shims, loggers, err := tug.Helpers(o.Containerd, namespace)
	if err != nil {
		return err
	}
	if len(shims) != 1 {
		return fmt.Errorf("%d shims for the flooding pod", len(shims))
	}
	tick := kit.ClockTicks()
	last := map[int]uint64{}
	sample := func(pids []int) {
		for _, p := range pids {
			if t, err := kit.ReadTicks(p); err == nil {
				last[p] = t
			}
		}
	}
	sample(append(append([]int{tug.PID()}, shims...), loggers...))
	start := maps(last)
	var logPath string
	var first time.Time
	deadline := time.Now().Add(10 * time.Minute)
	buf := make([]byte, 64)
	for {
		if time.Now().After(deadline) {
			return errors.New("the flooding pod's log never ended")
		}
		if err := tug.Alive(); err != nil {
			return err
		}
		sample(append(append([]int{tug.PID()}, shims...), loggers...))
		if logPath == "" {
			m, _ := filepath.Glob(filepath.Join(tug.LogsDir, "*", "main", "0.log"))
			if len(m) == 1 {
				logPath = m[0]
			}
		}
		if logPath != "" {
			if f, err := os.Open(logPath); err == nil {
				fi, _ := f.Stat()
				if fi.Size() > 0 && first.IsZero() {
					first = time.Now()
				}
				n, _ := f.ReadAt(buf, max(fi.Size()-int64(len(buf)), 0))
				f.Close()
				if bytes.HasSuffix(buf[:n], []byte(" END\n")) {
					break
				}
			}
		}
		if err := kit.Sleep(ctx, 10*time.Millisecond); err != nil {
			return err
		}
	}
	res.wall = time.Since(first)
	sample(append(append([]int{tug.PID()}, shims...), loggers...))
	cpu := func(pids []int) time.Duration {
		var t uint64
		for _, p := range pids {
			t += last[p] - start[p]
		}
		return time.Duration(t) * time.Second / time.Duration(tick)
	}
	res.tugCPU, res.shimCPU, res.logCPU = cpu([]int{tug.PID()}), cpu(shims), cpu(loggers)
	data, err := os.ReadFile(logPath)
	if err != nil {
		return err
	}
	res.lines = bytes.Count(data, []byte{'\n'})
	if want := o.mb*1000*1000/100 + 1; res.lines != want {
		return fmt.Errorf("the log holds %d lines, want %d", res.lines, want)
	}
	return nil
}

func maps(m map[int]uint64) map[int]uint64 {
	c := make(map[int]uint64, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func writeManifest(tug *kit.Tug, name, image string, command []string, restart string) error {
	q := make([]string, len(command))
	for i, c := range command {
		q[i] = strconv.Quote(c)
	}
	m := fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\nspec:\n  restartPolicy: %s\n  terminationGracePeriodSeconds: 0\n  containers:\n    - name: main\n      image: %s\n      command: [%s]\n",
		name, restart, image, strings.Join(q, ", "))
	tmp := filepath.Join(tug.Staging, name+".yaml")
	if err := os.WriteFile(tmp, []byte(m), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(tug.Manifests, name+".yaml"))
}

func removePods(ctx context.Context, client *containerd.Client, tug *kit.Tug) error {
	ms, _ := filepath.Glob(filepath.Join(tug.Manifests, "*.yaml"))
	for _, m := range ms {
		if err := os.Remove(m); err != nil {
			return err
		}
	}
	return kit.WaitGone(ctx, client, namespace, 2*time.Minute, nil)
}

func report(w io.Writer, o options, rs []result) {
	fmt.Fprintf(w, "\nbenchlogs: one container writes %d MB to stdout (lines of 100 bytes), per log driver, same run\n\n", o.mb)
	t := kit.Table{Header: []string{"driver", "wall", "MB/s", "tug CPU", "shim CPU", "logger CPU", "total CPU"}}
	for _, r := range rs {
		t.Row(r.driver, fmt.Sprintf("%.2f s", r.wall.Seconds()), fmt.Sprintf("%.1f", float64(o.mb)/r.wall.Seconds()),
			fmt.Sprintf("%.2f s", r.tugCPU.Seconds()), fmt.Sprintf("%.2f s", r.shimCPU.Seconds()), fmt.Sprintf("%.2f s", r.logCPU.Seconds()),
			fmt.Sprintf("%.2f s", (r.tugCPU+r.shimCPU+r.logCPU).Seconds()))
	}
	t.Write(w, o.Markdown)
	b, f := rs[0], rs[1]
	fmt.Fprintf(w, "file / binary: wall %s, total CPU %s\n\n", kit.DurationRatio(f.wall, b.wall),
		kit.DurationRatio(f.tugCPU+f.shimCPU+f.logCPU, b.tugCPU+b.shimCPU+b.logCPU))

	fmt.Fprintf(w, "footprint: %d one-container pods at rest, PSS (MiB) from /proc/PID/smaps_rollup\n\n", o.pods)
	t = kit.Table{Header: []string{"driver", "tug", "shims", "loggers", "total", "per pod (shim + logger)", "tug RSS", "tug CPU at rest"}}
	for _, r := range rs {
		total := r.tugPSS + r.shimPSS + r.logPSS
		t.Row(r.driver, fmt.Sprintf("%.1f", kit.MiB(r.tugPSS)), fmt.Sprintf("%.1f (%d)", kit.MiB(r.shimPSS), r.shims),
			fmt.Sprintf("%.1f (%d)", kit.MiB(r.logPSS), r.loggers), fmt.Sprintf("%.1f", kit.MiB(total)),
			fmt.Sprintf("%.2f", kit.MiB(r.shimPSS+r.logPSS)/float64(o.pods)), fmt.Sprintf("%.1f", kit.MiB(r.tugRSS)), fmt.Sprintf("%.3f%%", r.idleCPU))
	}
	t.Write(w, o.Markdown)
	fmt.Fprintln(w, "(the loggers are tug's binary: with the binary driver they share its text pages, which PSS divides among them all,")
	fmt.Fprintln(w, "so tug's own PSS looks smaller; RSS and the total are the comparable figures)")
	fmt.Fprintf(w, "file / binary: total PSS %s\n", kit.RatioString(float64(f.tugPSS+f.shimPSS+f.logPSS), float64(b.tugPSS+b.shimPSS+b.logPSS)))
}
