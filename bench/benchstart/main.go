// Command benchstart measures how fast tug starts pods ("make bench"):
// N one-container pod manifests are renamed into tug's manifest directory at
// once, on the pod network and with hostNetwork, and the time until the N-th
// task has started is compared with the floor, `ctr run -d` of the same N
// containers started all at once and one after another, and with `podman
// kube play` of the same pods when podman is installed. Every method runs
// in its own containerd namespace, its runs are interleaved with the
// others', and the time of each container or task event is the time it
// reached this process, one clock for every method. tug's own debug lines
// time each step of a pod's sandbox and of a container's start; the report
// gives their medians per pod. -base runs a second tug binary (an earlier
// commit's) beside the first in the same run.
//
//	go run ./bench/benchstart [-runs 5] [-n 1,10,30] [-tug ./tug] [-base OLD] [-podman auto|off|PATH] [-logger-diag] [-keep] [-markdown]
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
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"tug/bench/internal/kit"
)

// Namespaces of the two methods, and the host name tug is given so that its
// pod names (and so its container IDs) are known in advance.
const (
	nsTug    = "bench-tug"
	nsBase   = "bench-base"
	nsCtr    = "bench-ctr"
	hostname = "bench"
)

// Labels of the two tugs, the prefixes of their methods' names.
const (
	labelTug  = "tug"
	labelBase = "base"
)

type options struct {
	kit.Options
	runs       int
	ns         []int
	loggerDiag bool
	pickupLog  *regexp.Regexp
	idleStart  string
	tugArgs    string
	base       string // a second tug binary measured beside the first
	podman     string // podman's binary; "" when podman is not measured
}

func main() {
	if filepath.Base(os.Args[0]) == runcWrapperName {
		err := runcWrapper(os.Args[1:])
		fmt.Fprintln(os.Stderr, "benchstart as podman's runtime:", err)
		os.Exit(1)
	}
	var (
		o                  options
		ns, pickup, podman string
	)
	o.Flags(flag.CommandLine)
	flag.StringVar(&o.base, "base", "", "a second tug binary (another commit's) measured beside -tug in the same run")
	flag.StringVar(&podman, "podman", "auto", "podman binary to measure `podman kube play` with: auto (if installed), off, or a path")
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
	if err == nil {
		o.podman, err = findPodman(podman)
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

// findPodman resolves -podman: "off" measures no podman, "auto" the one
// on PATH if there is one, anything else must be podman's binary.
func findPodman(flagValue string) (string, error) {
	switch flagValue {
	case "off":
		return "", nil
	case "auto":
		bin, err := exec.LookPath("podman")
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchstart: podman is not installed; not measured (apt-get install podman catatonit)")
			return "", nil
		}
		return bin, nil
	}
	bin, err := exec.LookPath(flagValue)
	if err != nil {
		return "", fmt.Errorf("-podman: %w", err)
	}
	return bin, nil
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

	e.o.idleStart = kit.CPUIdle()
	fmt.Fprintf(os.Stderr, "benchstart: CPU idle before the start: %s\n", e.o.idleStart)
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
			progress(e, res, done, total, n, r)
		}
	}
	report(os.Stdout, e, res)
	return nil
}

// progress prints the ready times of the round just measured.
func progress(e *env, res *results, done, total, n, r int) {
	var b strings.Builder
	for _, m := range methods(e) {
		fmt.Fprintf(&b, "  %s %s", m.name, kit.MS(res.last(n, m.name)))
	}
	fmt.Fprintf(os.Stderr, "  [%d/%d] N=%d run %d:%s\n", done, total, n, r, b.String())
}

// warmUp runs each method once with one pod, unmeasured: it checks that
// everything works end to end (tug started, events arrive) and takes the
// first-container costs out of the measured runs.
func warmUp(ctx context.Context, e *env) error {
	fmt.Fprintln(os.Stderr, "benchstart: warm-up (N=1 per method, not counted)")
	for _, m := range methods(e) {
		if _, err := m.run(ctx, e, 1, -1); err != nil {
			return fmt.Errorf("warm-up %s: %w", m.name, err)
		}
	}
	return nil
}

// measureRound runs every method once for n pods, in a fixed order, so that
// drift on the machine hits all of them alike.
func measureRound(ctx context.Context, e *env, res *results, n, r int) error {
	for _, m := range methods(e) {
		s, err := m.run(ctx, e, n, r)
		if err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
		res.add(n, m.name, s)
	}
	return nil
}
