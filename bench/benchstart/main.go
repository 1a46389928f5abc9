// Command benchstart measures how fast tug starts pods ("make bench"):
// N one-container pod manifests are renamed into tug's manifest directory at
// once, and the time until the N-th task has started is compared with the
// floor, `ctr run -d` of the same N containers started all at once and one
// after another. Every method runs in its own containerd namespace, its runs
// are interleaved with the others', and the time of each container or task
// event is the time it reached this process, one clock for every method.
//
//	go run ./bench/benchstart [-runs 5] [-n 1,10,30] [-tug ./tug] [-logger-diag] [-keep] [-markdown]
//
// docs/benchmarks.md explains the method and holds measured numbers.
//
// It needs root and a containerd (scripts/testenv.sh up; the defaults come
// from its env file's variables). It prints the medians, the ratios and
// PASS/FAIL against its targets, and exits 0 whether
// the targets are met or not: it is a measurement. The measuring (events,
// containerd, tug, statistics, tables) is bench/internal/kit's.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"tug/bench/internal/kit"
)

// Namespaces of the two methods, and the host name tug is given so that its
// pod names (and so its container IDs) are known in advance.
const (
	nsTug    = "bench-tug"
	nsCtr    = "bench-ctr"
	hostname = "bench"
)

type options struct {
	kit.Options
	runs       int
	ns         []int
	loggerDiag bool
	pickupLog  *regexp.Regexp
	idleStart  string
	tugArgs    string
}

func main() {
	var (
		o          options
		ns, pickup string
	)
	o.Flags(flag.CommandLine)
	flag.IntVar(&o.runs, "runs", 5, "measured runs per method and N")
	flag.StringVar(&o.tugArgs, "tug-args", "", "more flags of tug run, space-separated (e.g. --shim-grouping=node)")
	flag.StringVar(&ns, "n", "1,10,30", "comma-separated numbers of pods started at once")
	flag.BoolVar(&o.loggerDiag, "logger-diag", false, "also measure ctr all-at-once with tug's log driver (what the logger costs)")
	flag.StringVar(&pickup, "pickup-log", `source=file:`, "regexp of the tug log line that marks a new file as picked up (N=1)")
	flag.Parse()

	var err error
	if o.ns, err = parseNs(ns); err == nil {
		err = o.check()
	}
	if err == nil {
		o.pickupLog, err = regexp.Compile(pickup)
	}
	kit.Run("benchstart", err, func(ctx context.Context) error { return run(ctx, o) })
}

func parseNs(s string) ([]int, error) {
	var ns []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 99 {
			return nil, fmt.Errorf("-n: %q is not a number of pods from 1 to 99", f)
		}
		ns = append(ns, n)
	}
	return ns, nil
}

func (o *options) check() error {
	err := o.Options.Check()
	if o.runs < 1 {
		err = errors.Join(err, errors.New("-runs: at least 1"))
	}
	return err
}

// run sets everything up, measures, prints the report and cleans up.
func run(ctx context.Context, o options) (err error) {
	e, err := setup(ctx, o)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, e.teardown()) }()

	o.idleStart = kit.CPUIdle()
	fmt.Fprintf(os.Stderr, "benchstart: CPU idle before the start: %s\n", o.idleStart)
	res := newResults()
	if err := warmUp(ctx, e); err != nil {
		return err
	}
	total := len(o.ns) * o.runs
	done := 0
	for _, n := range o.ns {
		for r := 0; r < o.runs; r++ {
			done++
			if err := measureRound(ctx, e, res, n, r); err != nil {
				return fmt.Errorf("N=%d run %d: %w", n, r, err)
			}
			progress(o, res, done, total, n, r)
		}
	}
	report(os.Stdout, o, res)
	return nil
}

// progress prints the ready times of the round just measured.
func progress(o options, res *results, done, total, n, r int) {
	var b strings.Builder
	for _, m := range methods(o) {
		fmt.Fprintf(&b, "  %s %s", m.name, kit.MS(res.last(n, m.name)))
	}
	fmt.Fprintf(os.Stderr, "  [%d/%d] N=%d run %d:%s\n", done, total, n, r, b.String())
}

// warmUp runs each method once with one pod, unmeasured: it checks that
// everything works end to end (tug started, events arrive) and takes the
// first-container costs out of the measured runs.
func warmUp(ctx context.Context, e *env) error {
	fmt.Fprintln(os.Stderr, "benchstart: warm-up (N=1 per method, not counted)")
	for _, m := range methods(e.o) {
		if _, err := m.run(ctx, e, 1, -1); err != nil {
			return fmt.Errorf("warm-up %s: %w", m.name, err)
		}
	}
	return nil
}

// measureRound runs every method once for n pods, in a fixed order, so that
// drift on the machine hits all of them alike.
func measureRound(ctx context.Context, e *env, res *results, n, r int) error {
	for _, m := range methods(e.o) {
		s, err := m.run(ctx, e, n, r)
		if err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
		res.add(n, m.name, s)
	}
	return nil
}
