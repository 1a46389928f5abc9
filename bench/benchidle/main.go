// Command benchidle measures what tug costs when nothing happens ("make
// bench"): it starts tug with N one-container pods (busybox sleep), waits
// until all run and the start-up has settled, then measures tug's CPU time
// over an idle window and its memory at the end. containerd, measured over
// the same window, is the baseline a reader can compare with (the ratios
// tug / containerd are of the same run); the shims and tug's per-container
// log drivers are shown too.
//
//	go run ./bench/benchidle [-pods 30] [-settle 60s] [-window 60s] [-tug ./tug] [-keep] [-markdown]
//
// It needs root and a containerd (scripts/testenv.sh up; the defaults come
// from its env file's variables). It prints PASS/FAIL against its targets
// (idle CPU under 0.5% of one core, RSS under 25 MiB;
// PSS, the round's measure of memory, is printed beside RSS) and exits 0
// whether they are met or not: it is a measurement. The measuring is
// bench/internal/kit's. docs/benchmarks.md holds measured numbers.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	containerd "github.com/containerd/containerd/v2/client"

	"tug/bench/internal/kit"
)

// The containerd namespace of the benchmark, and the host name tug is given.
const (
	namespace = "bench-idle"
	hostname  = "bench"
)

// Targets: the idle agent with 30 pods.
const (
	targetCPU = 0.5 // % of one core
	targetRSS = 25  // MiB
)

type options struct {
	kit.Options
	containerdPID int
	pods          int
	settle        time.Duration
	window        time.Duration
}

func main() {
	var o options
	o.Flags(flag.CommandLine)
	flag.IntVar(&o.containerdPID, "containerd-pid", 0, "pid of that containerd, for the baseline (default: from $TUG_TESTENV_DIR/containerd.pid)")
	flag.IntVar(&o.pods, "pods", 30, "number of running one-container pods")
	flag.DurationVar(&o.settle, "settle", 60*time.Second, "wait after all pods run, before measuring (tug at rest: past the rollout watch of new pods and the page-out of start-up pages)")
	flag.DurationVar(&o.window, "window", 60*time.Second, "idle window measured")
	flag.Parse()

	err := o.check()
	kit.Run("benchidle", err, func(ctx context.Context) error { return run(ctx, o) })
}

func (o *options) check() error {
	errs := []error{o.Options.Check()}
	if o.containerdPID == 0 {
		pid, err := kit.TestenvContainerdPID()
		if err != nil {
			errs = append(errs, fmt.Errorf("-containerd-pid: not set, and %w", err))
		}
		o.containerdPID = pid
	}
	if o.pods < 1 || o.pods > 200 {
		errs = append(errs, errors.New("-pods: from 1 to 200"))
	}
	if o.window < time.Second {
		errs = append(errs, errors.New("-window: at least 1s"))
	}
	return errors.Join(errs...)
}

// run is one run: the work directory, the containerd client and tug.
func run(ctx context.Context, o options) (err error) {
	if _, err := kit.ReadTicks(o.containerdPID); err != nil {
		return fmt.Errorf("containerd pid %d: %w", o.containerdPID, err)
	}
	s, err := kit.Open(ctx, "benchidle", o.Options, namespace)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.Close()) }()
	client := s.Client
	// tug as it runs in production: log level info, the health port on.
	tug, err := s.NewTug(ctx, kit.TugConfig{Hostname: hostname, Healthz: true, Netns: "idle"})
	if err != nil {
		return err
	}
	if err := tug.WriteSleepPods("idle", o.pods, o.Image, ""); err != nil {
		return err
	}
	if err := tug.AddImage(o.Archive); err != nil {
		return err
	}
	if err := tug.Start(); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "benchidle: tug started (pid %d, log %s); waiting for %d pods to run\n", tug.PID(), tug.LogPath, o.pods)
	t0 := time.Now()
	if err := tug.WaitPods(ctx, o.pods, 3*time.Minute, kit.AllRunning(1)); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "benchidle: %d pods running after %v; settling %v\n", o.pods, time.Since(t0).Round(time.Millisecond), o.settle)
	if err := kit.Sleep(ctx, o.settle); err != nil {
		return err
	}
	res, err := measure(ctx, o, client, tug)
	if err != nil {
		return err
	}
	if err := checkStillRunning(ctx, client, res.pids); err != nil {
		return err
	}
	report(os.Stdout, o, res)
	return nil
}

// result is what measure found.
type result struct {
	window time.Duration
	clkTck uint64
	groups []groupResult
	pids   map[string]int // container ID -> task pid, at the start
}

type groupResult struct {
	name       string
	n          int
	cpuPercent float64    // of one core, over the window
	mem        kit.Memory // at the end, summed over the group
}

// measure reads the CPU time of tug, containerd, the pods' shims and tug's
// log drivers at the start and the end of the idle window, and their memory
// at the end.
func measure(ctx context.Context, o options, client *containerd.Client, tug *kit.Tug) (result, error) {
	var res result
	pids, err := kit.TaskPIDs(ctx, client, namespace)
	if err != nil {
		return res, err
	}
	if len(pids) != o.pods {
		return res, fmt.Errorf("%d tasks in namespace %s, want %d", len(pids), namespace, o.pods)
	}
	res.pids = pids
	shims, loggers, err := tug.Helpers(o.Containerd, namespace)
	if err != nil {
		return res, err
	}
	win, err := kit.StartCPU(
		kit.ProcSet{Name: "tug run", PIDs: []int{tug.PID()}},
		kit.ProcSet{Name: "containerd", PIDs: []int{o.containerdPID}},
		kit.ProcSet{Name: "containerd-shim-runc-v2", PIDs: shims},
		kit.ProcSet{Name: "tug logger", PIDs: loggers},
	)
	if err != nil {
		return res, err
	}
	res.clkTck = win.ClockTicks()
	fmt.Fprintf(os.Stderr, "benchidle: measuring %v idle (tug pid %d, containerd pid %d, %d shims, %d log drivers)\n",
		o.window, tug.PID(), o.containerdPID, len(shims), len(loggers))
	if err := kit.Sleep(ctx, o.window); err != nil {
		return res, err
	}
	usage, window, err := win.Stop()
	if err != nil {
		return res, err
	}
	res.window = window
	if tug.Exited() {
		return res, fmt.Errorf("tug exited during the window: %w", tug.Alive())
	}
	for _, u := range usage {
		mem, err := kit.SumMemory(u.Set.PIDs)
		if err != nil {
			return res, fmt.Errorf("%s: %w", u.Set.Name, err)
		}
		res.groups = append(res.groups, groupResult{name: u.Set.Name, n: len(u.Set.PIDs), cpuPercent: u.Percent, mem: mem})
	}
	return res, nil
}

// checkStillRunning checks that the pods' tasks are the ones measured: an
// idle window with a restart in it would not be idle.
func checkStillRunning(ctx context.Context, client *containerd.Client, before map[string]int) error {
	now, err := kit.TaskPIDs(ctx, client, namespace)
	if err != nil {
		return err
	}
	for id, pid := range before {
		if now[id] != pid {
			return fmt.Errorf("task %s changed during the window (pid %d, now %d)", id, pid, now[id])
		}
	}
	return nil
}

func report(w io.Writer, o options, res result) {
	fmt.Fprintf(w, "\nbenchidle: %d pods running, %v idle window after %v of settling, CLK_TCK %d\n\n",
		o.pods, res.window.Round(time.Millisecond), o.settle, res.clkTck)
	t := kit.Table{Header: []string{"process", "count", "CPU (% of one core)", "RSS (MiB)", "VmHWM (MiB)", "PSS (MiB)"}}
	for _, g := range res.groups {
		t.Row(g.name, g.n, fmt.Sprintf("%.3f%%", g.cpuPercent),
			fmt.Sprintf("%.1f", kit.MiB(g.mem.RSS)), fmt.Sprintf("%.1f", kit.MiB(g.mem.HWM)), fmt.Sprintf("%.1f", kit.MiB(g.mem.PSS)))
	}
	t.Write(w, o.Markdown)
	fmt.Fprintln(w, "(RSS, VmHWM and PSS are summed over a group's processes; RSS counts shared pages in each.)")
	tug, ctd := res.groups[0], res.groups[1]
	rss, pss := kit.MiB(tug.mem.RSS), kit.MiB(tug.mem.PSS)
	fmt.Fprintln(w)
	fmt.Fprintf(w, "idle CPU: %.3f%% of one core (target < %g%%)  %s\n", tug.cpuPercent, targetCPU, kit.Verdict(tug.cpuPercent < targetCPU))
	fmt.Fprintf(w, "RSS: %.1f MiB (target < %d MiB)  %s  (VmHWM %.1f MiB)\n", rss, targetRSS, kit.Verdict(rss < targetRSS), kit.MiB(tug.mem.HWM))
	fmt.Fprintf(w, "PSS: %.1f MiB (the same target)  %s\n", pss, kit.Verdict(pss < targetRSS))
	fmt.Fprintf(w, "baseline, containerd over the same window: idle CPU %.3f%% of one core, RSS %.1f MiB (VmHWM %.1f MiB), PSS %.1f MiB\n",
		ctd.cpuPercent, kit.MiB(ctd.mem.RSS), kit.MiB(ctd.mem.HWM), kit.MiB(ctd.mem.PSS))
	fmt.Fprintf(w, "tug / containerd, same run: CPU %s, PSS %s\n",
		kit.RatioString(tug.cpuPercent, ctd.cpuPercent), kit.RatioString(float64(tug.mem.PSS), float64(ctd.mem.PSS)))
}
