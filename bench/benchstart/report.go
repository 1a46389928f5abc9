package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"time"

	"tug/bench/internal/kit"
)

// Method names, as printed.
const (
	methodTug    = "tug"
	methodCtrPar = "ctr all-at-once"
	methodCtrSeq = "ctr one-by-one"
	methodCtrLog = "ctr all-at-once + tug logger"
)

// Targets of pod start-up.
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

func newSample(tl kit.Timeline, t0 time.Time) sample {
	_, ready := kit.Span(tl.Started, t0)
	first, last := kit.Span(tl.Created, t0)
	_, lastTask := kit.Span(tl.TaskCreated, t0)
	return sample{
		ready: ready, firstCreate: first, lastCreate: last, lastTask: lastTask,
		createTask: kit.MedianGap(tl.Created, tl.TaskCreated),
		taskStart:  kit.MedianGap(tl.TaskCreated, tl.Started),
		wall:       -1, pickup: -1,
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

// report prints the tables and the verdicts.
func report(w io.Writer, o options, r *results) {
	fmt.Fprintf(w, "\ntug start-up benchmark, %s, %d CPUs, %d runs per method and N (medians, min–max in ms)\n",
		time.Now().Format("2006-01-02"), runtime.NumCPU(), o.runs)
	fmt.Fprintln(w, "ready = t0 (just before the first rename / first ctr start) -> the N-th /tasks/start event")
	fmt.Fprintln(w)
	t := kit.Table{Header: []string{"N", "tug", "ctr all-at-once", "ctr one-by-one", "tug / all-at-once", "tug / (1 ctr + 20 ms)", "pickup+create (N=1)"}}
	oneCtr := r.stat(1, methodCtrSeq, ready).Med
	for _, n := range o.ns {
		tug := r.stat(n, methodTug, ready)
		par := r.stat(n, methodCtrPar, ready)
		oneRatio, create := "", ""
		if n == 1 {
			oneRatio = kit.DurationRatio(tug.Med, oneCtr+targetOneSlack)
			create = r.stat(n, methodTug, firstCreate).String()
		}
		t.Row(n, tug, par, r.stat(n, methodCtrSeq, ready), kit.DurationRatio(tug.Med, par.Med), oneRatio, create)
	}
	t.Write(w, o.Markdown)

	fmt.Fprintln(w, "\nWhere the time goes (medians over runs, ms from t0; per container: medians within a run)")
	t = kit.Table{Header: []string{"N", "method", "1st create", "N-th create", "N-th task create", "N-th task start", "ctr returned", "per ctr: create->task create", "task create->start"}}
	for _, n := range o.ns {
		for _, m := range methods(o) {
			med := func(f func(sample) time.Duration) string {
				if d := r.stat(n, m.name, f).Med; d >= 0 {
					return kit.MSNum(d)
				}
				return "-"
			}
			t.Row(n, m.name, med(firstCreate), med(lastCreate), med(lastTask), med(ready), med(wall), med(createTask), med(taskStart))
		}
	}
	t.Write(w, o.Markdown)
	fmt.Fprintf(w, "\nCPU idle in the second before the benchmark: %s\n", o.idleStart)

	fmt.Fprintln(w)
	verdicts(w, r)
}

// verdicts prints PASS or FAIL against each target the measured Ns allow.
func verdicts(w io.Writer, r *results) {
	ms := kit.MS
	if tug, par := r.stat(targetManyN, methodTug, ready).Med, r.stat(targetManyN, methodCtrPar, ready).Med; tug >= 0 && par > 0 {
		limit := time.Duration(float64(par) * targetManyRatio)
		fmt.Fprintf(w, "%s  N=%d: tug %s <= %.1f x all-at-once floor %s = %s\n",
			kit.Verdict(tug <= limit), targetManyN, ms(tug), targetManyRatio, ms(par), ms(limit))
	}
	if tug, one := r.stat(1, methodTug, ready).Med, r.stat(1, methodCtrSeq, ready).Med; tug >= 0 && one >= 0 {
		limit := time.Duration(float64(one+targetOneSlack) * targetOneRatio)
		fmt.Fprintf(w, "%s  N=1: tug %s <= %.1f x (one ctr run %s + 20 ms) = %s\n",
			kit.Verdict(tug <= limit), ms(tug), targetOneRatio, ms(one), ms(limit))
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
