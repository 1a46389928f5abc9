package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Method names, as printed.
const (
	methodTug    = "tug"
	methodCtrPar = "ctr all-at-once"
	methodCtrSeq = "ctr one-by-one"
	methodCtrLog = "ctr all-at-once + tug logger"
)

// Targets of the benchmark issue.
const (
	targetManyRatio = 1.1                   // N=30: tug within 1.1x the all-at-once floor
	targetOneRatio  = 1.2                   // N=1: tug within 1.2x (one ctr run + 20 ms)
	targetOneSlack  = 20 * time.Millisecond // the + 20 ms
	targetPickup    = 100 * time.Millisecond
	targetManyN     = 30
)

// method is one way of starting n containers; run < 0 is the warm-up.
type method struct {
	name string
	run  func(ctx context.Context, e *env, n, run int) (sample, error)
}

// methods returns the methods in the order each round runs them.
func methods(o options) []method {
	ms := []method{{methodTug, runTug}, {methodCtrPar, runCtrParallel}, {methodCtrSeq, runCtrSerial}}
	if o.loggerDiag {
		ms = append(ms, method{methodCtrLog, runCtrLogger})
	}
	return ms
}

// sample is one measurement; every duration is from t0, -1 when unknown.
type sample struct {
	ready       time.Duration // the n-th /tasks/start event
	firstCreate time.Duration // the first /containers/create event
	lastCreate  time.Duration // the n-th /containers/create event
	lastTask    time.Duration // the n-th /tasks/create event
	createTask  time.Duration // per container, create -> task create (median)
	taskStart   time.Duration // per container, task create -> task start (median)
	wall        time.Duration // ctr: the last ctr process returned
	pickup      time.Duration // tug, n=1: tug's first log line matching -pickup-log
	pickupMsg   string        // that line's message
}

func newSample(tl timeline, t0 time.Time) sample {
	_, ready := span(tl.started, t0)
	first, last := span(tl.created, t0)
	_, lastTask := span(tl.taskCreated, t0)
	return sample{
		ready: ready, firstCreate: first, lastCreate: last, lastTask: lastTask,
		createTask: medianGap(tl.created, tl.taskCreated),
		taskStart:  medianGap(tl.taskCreated, tl.started),
		wall:       -1, pickup: -1,
	}
}

// medianGap is the median over the keys in both maps of to[k] - from[k].
func medianGap(from, to map[string]time.Time) time.Duration {
	var ds []time.Duration
	for k, t := range to {
		if f, ok := from[k]; ok {
			ds = append(ds, t.Sub(f))
		}
	}
	return summarise(ds).med
}

// results holds the samples per N and method.
type results struct {
	by map[int]map[string][]sample
}

func newResults() *results { return &results{by: map[int]map[string][]sample{}} }

func (r *results) add(n int, m string, s sample) {
	if r.by[n] == nil {
		r.by[n] = map[string][]sample{}
	}
	r.by[n][m] = append(r.by[n][m], s)
}

// last returns the ready time of the latest sample, -1 if there is none.
func (r *results) last(n int, m string) time.Duration {
	ss := r.by[n][m]
	if len(ss) == 0 {
		return -1
	}
	return ss[len(ss)-1].ready
}

// stat summarises one field of the samples of (n, m).
func (r *results) stat(n int, m string, field func(sample) time.Duration) stats {
	var ds []time.Duration
	for _, s := range r.by[n][m] {
		if d := field(s); d >= 0 {
			ds = append(ds, d)
		}
	}
	return summarise(ds)
}

// stats are the median, minimum and maximum of some durations; all -1
// when there are none.
type stats struct{ med, min, max time.Duration }

func summarise(ds []time.Duration) stats {
	if len(ds) == 0 {
		return stats{-1, -1, -1}
	}
	ds = slices.Clone(ds)
	slices.Sort(ds)
	med := ds[len(ds)/2]
	if len(ds)%2 == 0 {
		med = (ds[len(ds)/2-1] + ds[len(ds)/2]) / 2
	}
	return stats{med: med, min: ds[0], max: ds[len(ds)-1]}
}

func (s stats) String() string {
	if s.med < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%s (%s–%s)", ms(s.med), msNum(s.min), msNum(s.max))
}

func msNum(d time.Duration) string { return fmt.Sprintf("%.0f", float64(d)/float64(time.Millisecond)) }

func ratio(a, b time.Duration) string {
	if a < 0 || b <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", float64(a)/float64(b))
}

// Field selectors.
func ready(s sample) time.Duration       { return s.ready }
func firstCreate(s sample) time.Duration { return s.firstCreate }
func lastCreate(s sample) time.Duration  { return s.lastCreate }
func lastTask(s sample) time.Duration    { return s.lastTask }
func createTask(s sample) time.Duration  { return s.createTask }
func taskStart(s sample) time.Duration   { return s.taskStart }
func wall(s sample) time.Duration        { return s.wall }
func pickup(s sample) time.Duration      { return s.pickup }

// report prints the tables and the verdicts.
func report(w io.Writer, o options, r *results) {
	fmt.Fprintf(w, "\ntug start-up benchmark, %s, %d CPUs, %d runs per method and N (medians, min–max in ms)\n",
		time.Now().Format("2006-01-02"), runtime.NumCPU(), o.runs)
	fmt.Fprintln(w, "ready = t0 (just before the first rename / first ctr start) -> the N-th /tasks/start event")
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "N\ttug\tctr all-at-once\tctr one-by-one\ttug / all-at-once\ttug / (1 ctr + 20 ms)\tpickup+create (N=1)\t")
	oneCtr := r.stat(1, methodCtrSeq, ready).med
	for _, n := range o.ns {
		tug := r.stat(n, methodTug, ready)
		par := r.stat(n, methodCtrPar, ready)
		oneRatio, create := "", ""
		if n == 1 {
			oneRatio = ratio(tug.med, oneCtr+targetOneSlack)
			create = r.stat(n, methodTug, firstCreate).String()
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", n, tug, par, r.stat(n, methodCtrSeq, ready),
			ratio(tug.med, par.med), oneRatio, create)
	}
	tw.Flush()

	fmt.Fprintln(w, "\nWhere the time goes (medians over runs, ms from t0; per container: medians within a run)")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "N\tmethod\t1st create\tN-th create\tN-th task create\tN-th task start\tctr returned\tper ctr: create->task create\ttask create->start\t")
	for _, n := range o.ns {
		for _, m := range methods(o) {
			med := func(f func(sample) time.Duration) string {
				if d := r.stat(n, m.name, f).med; d >= 0 {
					return msNum(d)
				}
				return "-"
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", n, m.name,
				med(firstCreate), med(lastCreate), med(lastTask), med(ready), med(wall), med(createTask), med(taskStart))
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "\nCPU idle in the second before the benchmark: %s\n", o.idleStart)

	fmt.Fprintln(w)
	verdicts(w, r)
}

// verdicts prints PASS or FAIL against each target the measured Ns allow.
func verdicts(w io.Writer, r *results) {
	verdict := func(ok bool) string {
		if ok {
			return "PASS"
		}
		return "FAIL"
	}
	if tug, par := r.stat(targetManyN, methodTug, ready).med, r.stat(targetManyN, methodCtrPar, ready).med; tug >= 0 && par > 0 {
		limit := time.Duration(float64(par) * targetManyRatio)
		fmt.Fprintf(w, "%s  N=%d: tug %s <= %.1f x all-at-once floor %s = %s\n",
			verdict(tug <= limit), targetManyN, ms(tug), targetManyRatio, ms(par), ms(limit))
	}
	if tug, one := r.stat(1, methodTug, ready).med, r.stat(1, methodCtrSeq, ready).med; tug >= 0 && one >= 0 {
		limit := time.Duration(float64(one+targetOneSlack) * targetOneRatio)
		fmt.Fprintf(w, "%s  N=1: tug %s <= %.1f x (one ctr run %s + 20 ms) = %s\n",
			verdict(tug <= limit), ms(tug), targetOneRatio, ms(one), ms(limit))
	}
	pickupVerdict(w, r, verdict)
}

// pickupVerdict judges "a new file is picked up within 100 ms": by tug's
// own log line (-pickup-log) if it writes one, else by the create
// event, which is later (it includes the pod's sandbox and container
// creation) and so an upper bound.
func pickupVerdict(w io.Writer, r *results, verdict func(bool) string) {
	create := r.stat(1, methodTug, firstCreate).med
	if create < 0 {
		return
	}
	fromLog := r.stat(1, methodTug, pickup).med
	if fromLog >= 0 {
		msg := ""
		if ss := r.by[1][methodTug]; len(ss) > 0 {
			msg = ss[0].pickupMsg
		}
		fmt.Fprintf(w, "%s  pickup: rename -> tug's first log line matching -pickup-log (%q) %s <= %s (rename -> container create %s)\n",
			verdict(fromLog <= targetPickup), msg, ms(fromLog), ms(targetPickup), ms(create))
		return
	}
	fmt.Fprintf(w, "%s  pickup: rename -> container create %s <= %s (no tug log line matched -pickup-log; this upper bound also holds parse, pod store, worker, namespaces, image lookup, spec and create)\n",
		verdict(create <= targetPickup), ms(create), ms(targetPickup))
}

// cpuIdle returns the share of CPU time the machine was idle during the
// next second, from /proc/stat ("?" if unreadable): a busy machine makes
// every number noisy.
func cpuIdle() string {
	idle0, total0, err := cpuTimes()
	if err != nil {
		return "?"
	}
	time.Sleep(time.Second)
	idle1, total1, err := cpuTimes()
	if err != nil || total1 <= total0 {
		return "?"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(idle1-idle0)/float64(total1-total0))
}

// cpuTimes returns the idle (idle + iowait) and total jiffies of all CPUs.
func cpuTimes() (idle, total uint64, err error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, fmt.Errorf("read /proc/stat: %w", err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	for i, v := range f[1:] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/stat: %w", err)
		}
		total += n
		if i == 3 || i == 4 { // idle, iowait
			idle += n
		}
	}
	return idle, total, nil
}
