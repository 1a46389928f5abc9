// Command benchbytes measures the bytes tug sends and receives on the wire
// in a device-day ("make bench"), for devices on links paid by the byte
// (cellular, satellite). Tugs with N one-container pods run side by side
// against the same containerd, each in a network namespace of its own,
// with every upstream a TLS server on the host's loopback reached through
// a counting TCP proxy in the tug's namespace:
//
//   - a URL source (--manifest-url, a signed bundle of one pod, served
//     with an ETag: a poll that finds no change is a 304),
//   - an OCI source (--manifest-oci, a signed bundle of one pod in the
//     test environment's registry behind a TLS reverse proxy, trusted
//     through a certs.d hosts.toml in --registry-config-dir),
//   - the status document (--status-url, --status-url-ca),
//   - remote write (--metrics-remote-write-url; tug trusts the test CA
//     through SSL_CERT_FILE).
//
// The tugs: the baseline, built from -base-rev (the commit before the
// wire work) or -base; this tree at its defaults; and this tree with the
// metered profile of README's "Bytes on the wire" (meteredArgs). Each
// proxy counts the bytes of each direction (TLS records, handshakes
// included: the TCP payload) and the connections; iptables counters in
// the tug's namespace count the same streams at the IP level (TCP/IP
// headers, handshakes, ACKs and keep-alive probes included).
//
// The window is a compressed day: the default periods (URL 20 s, OCI 1 m,
// status heartbeat 5 m ±10 %, remote write pushed every 5 m with ten
// gatherings; the metered profile's are longer) run for -window, after
// the pods run and -settle has passed, and every figure is scaled by 24 h
// / window. Everything a quiet device sends is periodic (polls,
// heartbeats, pushes, the reconnections their idle timeouts cause), so the
// window should hold several periods of each: the default, 10 m, holds 30
// URL polls, 10 OCI polls, 2 heartbeats and 2 pushes, and 2 of the metered
// profile's 5 m polls. One bundle update is
// measured after the window: a new version of the OCI bundle (one pod
// added), its bytes from the push until the pod runs. The metered
// profile's heartbeat (30 m) and push (1 h) are longer than the window:
// its day is counted per period (printMetered), each feature's bytes per
// request times its requests a day.
//
//	go run ./bench/benchbytes [-pods 10] [-window 10m] [-settle 30s] [-tug ./tug] [-base ./tug-base | -base-rev REV] [-keep] [-markdown]
//
// It needs root, iptables and a containerd with its registry
// (scripts/testenv.sh up). It prints PASS/FAIL against the budgets (10 MiB
// a device-day at defaults, 1 MiB with the metered profile) and exits 0
// either way: it is a measurement. docs/benchmarks.md holds measured
// numbers.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"tug/bench/internal/kit"
)

// The budgets of a device-day on the wire.
const (
	budgetDefault = 10 << 20
	budgetMetered = 1 << 20
)

// meteredArgs is the metered profile (README, "Bytes on the wire"):
// polls every 5 minutes, the status document on a change and as a
// heartbeat every 30 minutes, metrics gathered every 10 minutes and pushed
// once an hour.
var meteredArgs = []string{
	"--http-check-frequency", "5m",
	"--oci-check-frequency", "5m",
	"--status-frequency", "30m",
	"--metrics-push-interval", "1h",
	"--metrics-sample-interval", "10m",
}

// Gatherings a push holds: at defaults (--metrics-push-interval 5m,
// --metrics-sample-interval 30s) and with the metered profile.
const (
	defaultGatherings = 10
	meteredGatherings = 6
)

type options struct {
	kit.Options
	pods     int
	window   time.Duration
	settle   time.Duration
	base     string
	baseRev  string
	registry string
}

func main() {
	var o options
	o.Flags(flag.CommandLine)
	flag.IntVar(&o.pods, "pods", 10, "one-container pods of each tug (in its manifest directory; each source adds one)")
	flag.DurationVar(&o.window, "window", 10*time.Minute, "window measured, scaled to a day")
	flag.DurationVar(&o.settle, "settle", 30*time.Second, "wait after all pods run, before the window")
	flag.StringVar(&o.base, "base", "", "baseline tug binary (default: build -base-rev)")
	flag.StringVar(&o.baseRev, "base-rev", "7eacd91", "commit the baseline tug is built from when -base is empty (the last one before the wire work)")
	flag.StringVar(&o.registry, "registry", kit.EnvOr("TUG_TEST_REGISTRY", "127.0.0.1:5000"), "plain-HTTP registry the OCI bundles are pushed to (default $TUG_TEST_REGISTRY)")
	flag.Parse()
	kit.Run("benchbytes", o.check(), func(ctx context.Context) error { return run(ctx, o) })
}

func (o *options) check() error {
	errs := []error{o.Options.Check()}
	if o.pods < 1 || o.pods > 100 {
		errs = append(errs, errors.New("-pods: from 1 to 100"))
	}
	if o.window < 2*time.Minute {
		errs = append(errs, errors.New("-window: at least 2m"))
	}
	if o.base == "" && o.baseRev == "" {
		errs = append(errs, errors.New("-base or -base-rev: the baseline is needed"))
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		errs = append(errs, fmt.Errorf("iptables: %w", err))
	}
	return errors.Join(errs...)
}

// subject is one tug under measurement.
type subject struct {
	name    string // "baseline", "this tree", "this tree, metered"
	bin     string
	args    []string
	session *kit.Session
	tug     *kit.Tug
	up      *upstreams
}

func run(ctx context.Context, o options) (err error) {
	client, err := kit.Connect(o.Containerd)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, client.Close()) }()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	subjects := []*subject{
		{name: "baseline"},
		{name: "this tree"},
		{name: "this tree, metered", args: meteredArgs},
	}
	for i, s := range subjects {
		if s.session, err = kit.OpenClient(ctx, "benchbytes", client, o.Options, fmt.Sprintf("bench-bytes-%d-%d", os.Getpid(), i)); err != nil {
			return err
		}
		defer func() { err = errors.Join(err, s.session.Close()) }()
	}
	work := subjects[0].session.Dir
	treeBin := o.Tug
	if treeBin == "" {
		if treeBin, err = kit.BuildTug(ctx, work); err != nil {
			return err
		}
	}
	baseBin := o.base
	if baseBin == "" {
		fmt.Fprintf(os.Stderr, "benchbytes: building the baseline tug from %s\n", o.baseRev)
		if baseBin, err = kit.BuildRev(ctx, o.baseRev, work); err != nil {
			return err
		}
	}
	subjects[0].bin, subjects[1].bin, subjects[2].bin = baseBin, treeBin, treeBin

	for i, s := range subjects {
		srv, err := startServers(s.session.Dir, o.registry)
		if err != nil {
			return err
		}
		defer srv.close()
		if s.up, err = srv.newUpstreams(ctx, s.session.Dir, fmt.Sprintf("bytes%d-%d", i, os.Getpid())); err != nil {
			return err
		}
		cfg := kit.TugConfig{
			Bin: s.bin, Hostname: fmt.Sprintf("bytes%d", i), Healthz: true, Netns: fmt.Sprintf("bytes%d", i),
			Args: append(s.up.args(), s.args...),
			Env:  []string{"SSL_CERT_FILE=" + srv.caFile},
			BeforeStart: func(netns string) error {
				if err := s.up.listen(ctx, netns); err != nil {
					return fmt.Errorf("%s: %w", s.name, err)
				}
				return nil
			},
		}
		if s.tug, err = s.session.NewTug(ctx, cfg); err != nil {
			return err
		}
		if err := s.tug.WriteSleepPods("bytes", o.pods, o.Image, ""); err != nil {
			return err
		}
		if err := s.tug.AddImage(o.Archive); err != nil {
			return err
		}
		if err := s.tug.Start(); err != nil {
			return err
		}
	}
	want := o.pods + 2 // the directory's, the URL bundle's, the OCI bundle's
	fmt.Fprintf(os.Stderr, "benchbytes: three tugs started; waiting for %d pods each\n", want)
	for _, s := range subjects {
		if err := s.tug.WaitPods(ctx, want, 5*time.Minute, kit.AllRunning(1)); err != nil {
			return fmt.Errorf("%s: %w (log %s)", s.name, err, s.tug.LogPath)
		}
	}
	fmt.Fprintf(os.Stderr, "benchbytes: all pods running; settling %v\n", o.settle)
	if err := kit.Sleep(ctx, o.settle); err != nil {
		return err
	}
	for _, s := range subjects {
		s.up.reset()
	}
	began := time.Now()
	fmt.Fprintf(os.Stderr, "benchbytes: measuring %v\n", o.window)
	if err := kit.Sleep(ctx, o.window); err != nil {
		return err
	}
	window := time.Since(began)
	day := make([]map[string]counts, len(subjects))
	for i, s := range subjects {
		if err := s.tug.Alive(); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		day[i] = s.up.read()
	}

	// One bundle update: a second version of each tug's OCI bundle, one
	// pod added; its bytes from the push until that pod runs.
	fmt.Fprintf(os.Stderr, "benchbytes: one bundle update\n")
	update := make([]map[string]counts, len(subjects))
	for _, s := range subjects {
		s.up.reset()
		if err := s.up.pushBundle(ctx, 2); err != nil {
			return err
		}
	}
	for i, s := range subjects {
		if err := s.tug.WaitPods(ctx, want+1, 12*time.Minute, kit.AllRunning(1)); err != nil {
			return fmt.Errorf("%s: bundle update: %w", s.name, err)
		}
		update[i] = s.up.read()
	}
	printReport(os.Stdout, o, window, subjects, day, update)
	return nil
}

// features are the upstreams, in the report's order.
var features = []string{"URL poll", "OCI poll", "status", "remote write"}

func printReport(w io.Writer, o options, window time.Duration, subjects []*subject, day, update []map[string]counts) {
	scale := float64(24*time.Hour) / float64(window)
	fmt.Fprintf(w, "benchbytes: %d pods (+1 from each source), window %v scaled ×%.1f to a device-day; TLS everywhere\n\n", o.pods, window.Round(time.Second), scale)
	t := &kit.Table{Header: []string{"feature", "tug", "TCP payload/day", "up", "down", "requests/day", "conns/day", "IP level/day", "vs baseline"}}
	totals := make([]counts, len(subjects))
	for _, f := range append(features, "total") {
		for i, s := range subjects {
			c := day[i][f]
			if f == "total" {
				c = totals[i]
			} else {
				totals[i] = totals[i].add(c)
			}
			ratio := "-"
			if i > 0 {
				b := day[0][f]
				if f == "total" {
					b = totals[0]
				}
				ratio = kit.RatioString(float64(c.payload()), float64(b.payload()))
			}
			t.Row(f, s.name, size(float64(c.payload())*scale), size(float64(c.up)*scale), size(float64(c.down)*scale),
				fmt.Sprintf("%.0f", float64(c.requests)*scale), fmt.Sprintf("%.0f", float64(c.conns)*scale), ipSize(c, scale), ratio)
		}
	}
	_ = t.Write(w, o.Markdown)
	fmt.Fprintln(w)
	u := &kit.Table{Header: []string{"one bundle update", "OCI (TCP payload)", "status (TCP payload)", "all upstreams", "IP level, all"}}
	for i, s := range subjects {
		var all counts
		for _, f := range features {
			all = all.add(update[i][f])
		}
		u.Row(s.name, size(float64(update[i]["OCI poll"].payload())), size(float64(update[i]["status"].payload())),
			size(float64(all.payload())), ipSize(all, 1))
	}
	_ = u.Write(w, o.Markdown)
	fmt.Fprintln(w)
	met := printMetered(w, o, day[0], day[1], day[2])
	def := float64(totals[1].payload()) * scale
	fmt.Fprintf(w, "budget at defaults: %s a device-day, under %s: %s\n", size(def), size(budgetDefault), kit.Verdict(def < budgetDefault))
	fmt.Fprintf(w, "budget, metered profile (%s): %s a device-day, under %s: %s\n", strings.Join(meteredArgs, " "), size(met), size(budgetMetered), kit.Verdict(met < budgetMetered))
}

// meteredPeriods are the metered profile's periods (meteredArgs).
var meteredPeriods = map[string]time.Duration{
	"URL poll": 5 * time.Minute, "OCI poll": 5 * time.Minute, "status": 30 * time.Minute, "remote write": time.Hour,
}

// printMetered prints the metered profile's day per period and returns
// its total: each feature's bytes per request times its requests a day.
// The polls (5 m) are measured: the window holds a few, each over the
// connection the last one left. The heartbeat (30 m) and the push (1 h)
// are longer than the window and than their clients' idle timeout (90 s):
// each costs the default tug's request (the same document; the same
// series, with meteredGatherings samples each where the default's have
// defaultGatherings, counted as that many times the default's request)
// plus a reconnection, counted as a full TLS handshake (the baseline's OCI
// poll, a new connection each, less this tree's, over a kept one): an
// upper bound, a resumed session costs less and the labels of a series are
// sent once a request, not once a sample.
func printMetered(w io.Writer, o options, base, def, met map[string]counts) float64 {
	per := func(c counts) (float64, bool) {
		if c.requests == 0 {
			return 0, false
		}
		return float64(c.payload()) / float64(c.requests), true
	}
	reconnect := 0.0
	if b, ok := per(base["OCI poll"]); ok {
		if d, ok := per(def["OCI poll"]); ok && b > d {
			reconnect = b - d
		}
	}
	t := &kit.Table{Header: []string{"metered profile", "period", "bytes/request", "from", "requests/day", "TCP payload/day"}}
	total := 0.0
	for _, f := range features {
		cost, ok := per(met[f])
		from := "measured"
		if !ok { // a window shorter than the period: the default tug's poll, over its kept connection
			cost, _ = per(def[f])
			from = "default's (none in the window)"
		}
		switch f {
		case "status":
			d, _ := per(def[f])
			cost, from = d+reconnect, "default's + reconnection"
		case "remote write":
			d, _ := per(def[f])
			cost = d*meteredGatherings/defaultGatherings + reconnect
			from = fmt.Sprintf("default's ×%d/%d + reconnection", meteredGatherings, defaultGatherings)
		}
		n := float64(24*time.Hour) / float64(meteredPeriods[f])
		total += cost * n
		t.Row(f, meteredPeriods[f], fmt.Sprintf("%.0f", cost), from, fmt.Sprintf("%.0f", n), size(cost*n))
	}
	t.Row("total", "", "", "", "", size(total))
	_ = t.Write(w, o.Markdown)
	fmt.Fprintf(w, "(a reconnection, counted as a full TLS handshake: %.0f bytes)\n\n", reconnect)
	return total
}

func size(b float64) string {
	switch {
	case b >= 1<<20:
		return fmt.Sprintf("%.2f MiB", b/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", b/(1<<10))
	}
	return fmt.Sprintf("%.0f B", b)
}

func ipSize(c counts, scale float64) string {
	if c.ipBytes < 0 {
		return "-"
	}
	return size(float64(c.ipBytes) * scale)
}
