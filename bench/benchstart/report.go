package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"sort"
	"strings"
	"time"

	"tug/bench/internal/kit"
)

// Method names, as printed.
const (
	methodTug       = labelTug + " pod network"
	methodTugHost   = labelTug + " hostNetwork"
	methodCtrPar    = "ctr all-at-once"
	methodCtrSeq    = "ctr one-by-one"
	methodCtrLog    = "ctr all-at-once + tug logger"
	methodCtrPod    = "ctr all-at-once, pod spec"
	methodPodman    = "podman bridge"
	methodPodmanHst = "podman hostNetwork"
)

// Targets of pod start-up.
const (
	targetPodNetRatio = 1.10                  // N=10 and N=30: tug on the pod network within 1.10x the all-at-once floor
	targetHostRatio   = 1.05                  // N=10 and N=30: tug with hostNetwork within 1.05x
	targetOneSlack    = 15 * time.Millisecond // N=1: tug within one ctr run + 15 ms
	targetPodman      = 2.5                   // podman kube play at least 2.5x tug's time
	targetPickup      = 100 * time.Millisecond
)

// targetManyNs are the Ns the ratio targets hold for.
var targetManyNs = []int{10, 30}

// method is one way of starting n containers; run < 0 is the warm-up.
type method struct {
	name string
	run  func(ctx context.Context, e *env, n, run int) (sample, error)
}

// methods returns the methods in the order each round runs them.
func methods(e *env) []method {
	var ms []method
	for _, u := range e.tugs {
		ms = append(ms, tugMethod(u, false), tugMethod(u, true))
	}
	ms = append(ms, method{methodCtrPar, runCtrParallel}, method{methodCtrPod, runCtrPodSpec}, method{methodCtrSeq, runCtrSerial})
	if e.o.loggerDiag {
		ms = append(ms, method{methodCtrLog, runCtrLogger})
	}
	if e.podman != nil {
		ms = append(ms, podmanMethod(false), podmanMethod(true))
	}
	return ms
}

// sample is one measurement; every duration is from t0, -1 when unknown.
type sample struct {
	ready       time.Duration              // the n-th /tasks/start event
	firstCreate time.Duration              // the first /containers/create event
	lastCreate  time.Duration              // the n-th /containers/create event
	lastTask    time.Duration              // the n-th /tasks/create event
	createTask  time.Duration              // per container, create -> task create (median)
	taskStart   time.Duration              // per container, task create -> task start (median)
	wall        time.Duration              // ctr: the last ctr process returned
	pickup      time.Duration              // tug, n=1: tug's first log line matching -pickup-log
	pickupMsg   string                     // that line's message
	cpu         time.Duration              // tug: its CPU time from t0 to ready
	ctrdCPU     time.Duration              // containerd's CPU time from t0 to ready (-1: unknown)
	steps       map[string][]time.Duration // tug: its timed steps, one duration per pod
	stepOrder   []string                   // the keys of steps in the order tug logs them
}

func newSample(tl kit.Timeline, t0 time.Time) sample {
	_, ready := kit.Span(tl.Started, t0)
	first, last := kit.Span(tl.Created, t0)
	_, lastTask := kit.Span(tl.TaskCreated, t0)
	return sample{
		ready: ready, firstCreate: first, lastCreate: last, lastTask: lastTask,
		createTask: kit.MedianGap(tl.Created, tl.TaskCreated),
		taskStart:  kit.MedianGap(tl.TaskCreated, tl.Started),
		wall:       -1, pickup: -1, cpu: -1, ctrdCPU: -1,
	}
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
func (r *results) stat(n int, m string, field func(sample) time.Duration) kit.Summary {
	var ds []time.Duration
	for _, s := range r.by[n][m] {
		if d := field(s); d >= 0 {
			ds = append(ds, d)
		}
	}
	return kit.Summarise(ds)
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
func tugCPU(s sample) time.Duration      { return s.cpu }
func ctrdCPU(s sample) time.Duration     { return s.ctrdCPU }

// report prints the tables and the verdicts.
func report(w io.Writer, e *env, r *results) {
	o := e.o
	ms := methods(e)
	fmt.Fprintf(w, "\ntug start-up benchmark, %s, %d CPUs, %d runs per method and N (medians, min–max in ms)\n",
		time.Now().Format("2006-01-02"), runtime.NumCPU(), o.runs)
	fmt.Fprintln(w, "ready = t0 (just before the first rename / first ctr start / podman kube play) -> the N-th /tasks/start event (podman: kube play returned)")
	fmt.Fprintln(w)
	header := []string{"N"}
	for _, m := range ms {
		header = append(header, m.name)
	}
	t := kit.Table{Header: header}
	for _, n := range o.ns {
		row := []any{n}
		for _, m := range ms {
			row = append(row, r.stat(n, m.name, ready))
		}
		t.Row(row...)
	}
	t.Write(w, o.Markdown)

	fmt.Fprintln(w, "\nRatios (medians): each tug to the all-at-once floors (plain ctr run, and with what tug's spec adds: seccomp, /etc bind mounts); N=1 also tug − one ctr run; podman to tug")
	t = kit.Table{Header: []string{"N", "method", "/ all-at-once", "/ all-at-once, pod spec", "− one ctr run (N=1)", "podman / it"}}
	oneCtr := r.stat(1, methodCtrSeq, ready).Med
	for _, n := range o.ns {
		par := r.stat(n, methodCtrPar, ready).Med
		podSpec := r.stat(n, methodCtrPod, ready).Med
		for _, m := range ms {
			if !isTug(m.name) {
				continue
			}
			tug := r.stat(n, m.name, ready).Med
			diff := ""
			if n == 1 && oneCtr >= 0 {
				diff = fmt.Sprintf("%+d ms", (tug - oneCtr).Milliseconds())
			}
			t.Row(n, m.name, kit.DurationRatio(tug, par), kit.DurationRatio(tug, podSpec), diff, kit.DurationRatio(r.stat(n, podmanFor(m.name), ready).Med, tug))
		}
	}
	t.Write(w, o.Markdown)

	fmt.Fprintln(w, "\nWhere the time goes (medians over runs, ms from t0; per container: medians within a run; CPU: ms of CPU time from t0 to ready, at clock-tick resolution)")
	t = kit.Table{Header: []string{"N", "method", "1st create", "N-th create", "N-th task create", "N-th task start", "ctr returned", "per ctr: create->task create", "task create->start", "tug CPU", "containerd CPU"}}
	for _, n := range o.ns {
		for _, m := range ms {
			if strings.HasPrefix(m.name, "podman") {
				continue
			}
			med := func(f func(sample) time.Duration) string {
				if d := r.stat(n, m.name, f).Med; d >= 0 {
					return kit.MSNum(d)
				}
				return "-"
			}
			t.Row(n, m.name, med(firstCreate), med(lastCreate), med(lastTask), med(ready), med(wall), med(createTask), med(taskStart), med(tugCPU), med(ctrdCPU))
		}
	}
	t.Write(w, o.Markdown)
	stepsReport(w, e, r)
	fmt.Fprintf(w, "\nCPU idle in the second before the benchmark: %s\n", o.idleStart)

	fmt.Fprintln(w)
	verdicts(w, e, r)
}

// isTug reports whether the method measures a tug.
func isTug(name string) bool {
	return strings.HasPrefix(name, labelTug+" ") || strings.HasPrefix(name, labelBase+" ")
}

// podmanFor is the podman method to hold tug's method name against.
func podmanFor(name string) string {
	if strings.HasSuffix(name, "hostNetwork") {
		return methodPodmanHst
	}
	return methodPodman
}

// stepsReport prints the median of each step tug timed, per pod, over
// every pod and run of an N: a row per step, a column per N and tug
// method.
func stepsReport(w io.Writer, e *env, r *results) {
	type col struct {
		n int
		m string
	}
	var cols []col
	seen := map[string]bool{}
	var names []string
	for _, n := range e.o.ns {
		for _, m := range methods(e) {
			if !isTug(m.name) {
				continue
			}
			cols = append(cols, col{n, m.name})
			for _, s := range r.by[n][m.name] {
				for _, k := range s.stepOrder {
					if !seen[k] {
						seen[k] = true
						names = append(names, k)
					}
				}
			}
		}
	}
	if len(names) == 0 {
		fmt.Fprintln(w, "\ntug wrote no step timings (a tug without them: an older commit, or not at --log-level debug)")
		return
	}
	sort.SliceStable(names, func(i, j int) bool { return stepOrder(names[i]) < stepOrder(names[j]) })
	fmt.Fprintln(w, "\ntug's steps per pod (ms, median over every pod of every run; sandbox: the first sync, network steps included; start: one container)")
	header := []string{"step"}
	for _, c := range cols {
		header = append(header, fmt.Sprintf("N=%d %s", c.n, c.m))
	}
	t := kit.Table{Header: header}
	for _, k := range names {
		row := []any{k}
		for _, c := range cols {
			var ds []time.Duration
			for _, s := range r.by[c.n][c.m] {
				ds = append(ds, s.steps[k]...)
			}
			if len(ds) == 0 {
				row = append(row, "-")
				continue
			}
			row = append(row, fmt.Sprintf("%.1f", float64(kit.Summarise(ds).Med.Microseconds())/1000))
		}
		t.Row(row...)
	}
	t.Write(w, e.o.Markdown)
}

// stepOrder sorts the steps as tug runs them: the sandbox's, then the
// start's, each total last; within a kind, by first appearance.
func stepOrder(k string) int {
	o := 0
	if strings.HasPrefix(k, "start ") {
		o = 2
	}
	if strings.HasSuffix(k, " total") {
		o++
	}
	return o
}

// verdicts prints PASS or FAIL against each target the measured Ns allow.
func verdicts(w io.Writer, e *env, r *results) {
	ms := kit.MS
	for _, n := range targetManyNs {
		par := r.stat(n, methodCtrPar, ready).Med
		for _, c := range []struct {
			m     string
			ratio float64
		}{{methodTug, targetPodNetRatio}, {methodTugHost, targetHostRatio}} {
			tug := r.stat(n, c.m, ready).Med
			if tug < 0 || par <= 0 {
				continue
			}
			limit := time.Duration(float64(par) * c.ratio)
			fmt.Fprintf(w, "%s  N=%d: %s %s <= %.2f x all-at-once floor %s = %s\n",
				kit.Verdict(tug <= limit), n, c.m, ms(tug), c.ratio, ms(par), ms(limit))
		}
		if pod := r.stat(n, methodCtrPod, ready).Med; pod > 0 && par > 0 {
			fmt.Fprintf(w, "FLOOR N=%d: ctr with what tug's spec adds (seccomp, /etc mounts) %s = %s x the all-at-once floor; tug pod network %s x it, tug hostNetwork %s x it\n",
				n, ms(pod), kit.DurationRatio(pod, par), kit.DurationRatio(r.stat(n, methodTug, ready).Med, pod), kit.DurationRatio(r.stat(n, methodTugHost, ready).Med, pod))
		}
	}
	if one := r.stat(1, methodCtrSeq, ready).Med; one >= 0 {
		for _, m := range []string{methodTug, methodTugHost} {
			if tug := r.stat(1, m, ready).Med; tug >= 0 {
				limit := one + targetOneSlack
				fmt.Fprintf(w, "%s  N=1: %s %s <= one ctr run %s + 15 ms = %s\n",
					kit.Verdict(tug <= limit), m, ms(tug), ms(one), ms(limit))
			}
		}
	}
	for _, n := range e.o.ns {
		for _, m := range []string{methodTug, methodTugHost} {
			tug, pm := r.stat(n, m, ready).Med, r.stat(n, podmanFor(m), ready).Med
			if tug > 0 && pm >= 0 {
				fmt.Fprintf(w, "%s  N=%d: %s %s >= %.1f x %s %s = %s\n",
					kit.Verdict(float64(pm) >= targetPodman*float64(tug)), n, podmanFor(m), ms(pm), targetPodman, m, ms(tug), ms(time.Duration(targetPodman*float64(tug))))
			}
		}
	}
	pickupVerdict(w, r)
}

// pickupVerdict judges "a new file is picked up within 100 ms": by tug's
// own log line (-pickup-log) if it writes one, else by the create
// event, which is later (it includes the pod's sandbox and container
// creation) and so an upper bound.
func pickupVerdict(w io.Writer, r *results) {
	ms := kit.MS
	create := r.stat(1, methodTug, firstCreate).Med
	if create < 0 {
		return
	}
	fromLog := r.stat(1, methodTug, pickup).Med
	if fromLog >= 0 {
		msg := ""
		if ss := r.by[1][methodTug]; len(ss) > 0 {
			msg = ss[0].pickupMsg
		}
		fmt.Fprintf(w, "%s  pickup: rename -> tug's first log line matching -pickup-log (%q) %s <= %s (rename -> container create %s)\n",
			kit.Verdict(fromLog <= targetPickup), msg, ms(fromLog), ms(targetPickup), ms(create))
		return
	}
	fmt.Fprintf(w, "%s  pickup: rename -> container create %s <= %s (no tug log line matched -pickup-log; this upper bound also holds parse, pod store, worker, namespaces, image lookup, spec and create)\n",
		kit.Verdict(create <= targetPickup), ms(create), ms(targetPickup))
}
