package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"tug/internal/bundle"
	"tug/internal/config"
	"tug/internal/pod"
	"tug/internal/registry"
	"tug/internal/selfupdate"
	"tug/internal/statusreport"
	"tug/internal/window"
)

// selfUpdateTestFault is a test build's fault, set with -ldflags
// "-X main.selfUpdateTestFault=...": "exit" (tug run exits at start),
// "hang" (tug runs but never feeds systemd's watchdog), "gate" (the
// trial's health gate fails). The tests of self-update build their bad
// releases with it; a normal build has none.
var selfUpdateTestFault = ""

// envSlot is set by the launcher to the slot it executed, so that the
// executed tug neither launches again nor mistakes which slot it is.
const envSlot = "TUG_SELF_SLOT"

// launchSelf is the first step of "tug run": the launch guard
// (selfupdate.Decide) on <root-dir>/self, then an exec of the slot's
// binary when a slot is to run. It returns when this binary is to run
// (no A/B layout, the installed binary is the good one, or the exec
// failed).
func launchSelf(args []string, stderr io.Writer) {
	if os.Getenv(envSlot) != "" {
		return
	}
	l := selfupdate.NewLayout(config.RootDirOf(args))
	if _, err := os.Stat(l.Dir); err != nil {
		return
	}
	st, err := selfupdate.ReadState(l.StateFile())
	if err != nil {
		fmt.Fprintf(stderr, "tug: self-update: %v; the installed binary runs\n", err)
		return
	}
	cur, err := l.Current()
	if err != nil {
		fmt.Fprintf(stderr, "tug: self-update: %v\n", err)
	}
	d := selfupdate.Decide(st, cur, selfupdate.DefaultMaxLaunches, time.Now())
	if err := l.Apply(d); err != nil {
		fmt.Fprintf(stderr, "tug: self-update: launch guard: %v; the installed binary runs\n", err)
		return
	}
	switch {
	case d.Reverted:
		fmt.Fprintf(stderr, "tug: self-update: release %d reverted: %s\n", st.Trial.Version, d.Reason)
	case d.Reason != "":
		fmt.Fprintf(stderr, "tug: self-update: %s\n", d.Reason)
	case d.State.Trial != nil:
		fmt.Fprintf(stderr, "tug: self-update: release %d on trial, launch %d of %d\n", d.State.Trial.Version, d.State.Trial.Launches, selfupdate.DefaultMaxLaunches)
	}
	if d.Slot == "" {
		return
	}
	exe := l.Bin(d.Slot)
	os.Setenv(envSlot, d.Slot)
	err = syscall.Exec(exe, append([]string{exe, "run"}, args...), os.Environ())
	os.Unsetenv(envSlot)
	fmt.Fprintf(stderr, "tug: self-update: exec %s: %v; the installed binary runs\n", exe, err)
}

// runningSlot is the slot this tug runs from ("" for the installed
// binary).
func runningSlot() string {
	if s := os.Getenv(envSlot); s == selfupdate.SlotA || s == selfupdate.SlotB {
		return s
	}
	return ""
}

// checkConfigCmd is "tug check-config [run flags]": it reads the
// configuration as tug run would (flags, file, every check of its
// values) and exits 0 when it is accepted. A release's binary is asked
// this before tug switches to it.
func checkConfigCmd(_ context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := config.Parse("tug check-config", args)
	if errors.Is(err, pflag.ErrHelp) {
		fmt.Fprint(stdout, "usage: tug check-config [tug run's flags]\n\nReads the configuration as tug run would (flags and --config file) and exits 0\nwhen it is accepted. tug asks a release's binary this before it switches to it.\n\n")
		config.PrintFlags(stdout)
		return 0
	}
	if err == nil && len(cfg.ManifestVerifyKey) > 0 {
		_, err = bundle.LoadPublicKeys(cfg.ManifestVerifyKey)
	}
	if err != nil {
		fmt.Fprintln(stderr, "tug: check-config:", err)
		return 1
	}
	fmt.Fprintln(stdout, "configuration accepted")
	return 0
}

// checkRelease returns the check of a release's binary: it runs, prints
// its version, and accepts this device's configuration (args, tug run's).
func checkRelease(args []string) func(ctx context.Context, path string) (string, error) {
	return func(ctx context.Context, path string) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, path, "version")
		cmd.Env = withoutSlot(os.Environ())
		out, err := cmd.Output()
		printed, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
		if err != nil || !strings.HasPrefix(printed, "tug ") {
			return "", fmt.Errorf("%s version: %q, %v", path, truncate(printed, 200), err)
		}
		cmd = exec.CommandContext(ctx, path, append([]string{"check-config"}, args...)...)
		cmd.Env = withoutSlot(os.Environ())
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("%s check-config: %v: %s", path, err, truncate(strings.TrimSpace(string(out)), 500))
		}
		return strings.TrimPrefix(printed, "tug "), nil
	}
}

func withoutSlot(env []string) []string {
	out := env[:0:0]
	for _, e := range env {
		if !strings.HasPrefix(e, envSlot+"=") {
			out = append(out, e)
		}
	}
	return out
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// openSelfUpdate reads the A/B state (a damaged file is a Warn and the
// zero state).
func openSelfUpdate(cfg config.Config, log *slog.Logger) *selfupdate.Store {
	l := selfupdate.NewLayout(cfg.RootDir)
	st, err := selfupdate.ReadState(l.StateFile())
	if err != nil {
		log.Warn("self-update state", "file", l.StateFile(), "err", err)
	}
	return selfupdate.NewStore(l.StateFile(), st)
}

// selfUpdateDoc is the status document's selfUpdate: nil while nothing
// was ever installed or followed.
func selfUpdateDoc(store *selfupdate.Store, followed bool) func() *statusreport.SelfUpdate {
	return func() *statusreport.SelfUpdate {
		st := store.Get()
		if !followed && st.Last == nil && st.Trial == nil && st.Committed == 0 {
			return nil
		}
		d := &statusreport.SelfUpdate{State: store.Current(), Committed: st.Committed}
		switch {
		case st.Trial != nil:
			d.Version = st.Trial.Version
		case st.Last != nil:
			d.Version = st.Last.Version
			if st.Last.State == selfupdate.StateReverted {
				d.Reason = st.Last.Reason
			}
		}
		if w := store.Wait(); w != nil && st.Trial == nil {
			d.Version, d.Slot = w.Version, w.Slot
			d.Wave = &statusreport.Wave{State: w.State, Version: w.Version, Index: w.Wave.Index, Name: w.Wave.Name,
				WaveOpens: w.Wave.Opens.UTC(), Opens: w.Opens.UTC(), Reason: w.Reason}
		}
		for v := range st.Broken {
			d.Broken = append(d.Broken, v)
		}
		slices.Sort(d.Broken)
		return d
	}
}

// selfUpdateCollector exports the self-update's state on /metrics.
type selfUpdateCollector struct{ store *selfupdate.Store }

var (
	selfUpdateRevertedDesc = prometheus.NewDesc("tug_self_update_reverted_total",
		"Releases of tug reverted on this device (kept across restarts in the self-update state).", nil, nil)
	selfUpdateStateDesc = prometheus.NewDesc("tug_self_update_state",
		"1 for the self-update's current state (idle, downloading, waiting, trial, committed, reverted, halted), 0 for the others.", []string{"state"}, nil)
	selfUpdateWaveOpensDesc = prometheus.NewDesc("tug_self_update_wave_opens_timestamp_seconds",
		"When the device's wave of the release installed ahead opens (Unix time); 0 when no release with a rollout plan waits.", nil, nil)
	buildInfoDesc = prometheus.NewDesc("tug_build_info",
		"1, with the running tug's version as a label.", []string{"version"}, nil)
)

func (c selfUpdateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- selfUpdateRevertedDesc
	ch <- selfUpdateStateDesc
	ch <- selfUpdateWaveOpensDesc
	ch <- buildInfoDesc
}

func (c selfUpdateCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.store.Get()
	ch <- prometheus.MustNewConstMetric(selfUpdateRevertedDesc, prometheus.CounterValue, float64(st.Reverted))
	cur := c.store.Current()
	for _, s := range selfupdate.States {
		v := 0.0
		if s == cur {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(selfUpdateStateDesc, prometheus.GaugeValue, v, s)
	}
	opens := 0.0
	if w := c.store.Wait(); w != nil && w.State == selfupdate.StateWaiting && !w.Wave.Opens.IsZero() {
		opens = float64(w.Wave.Opens.Unix())
	}
	ch <- prometheus.MustNewConstMetric(selfUpdateWaveOpensDesc, prometheus.GaugeValue, opens)
	ch <- prometheus.MustNewConstMetric(buildInfoDesc, prometheus.GaugeValue, 1, buildVersion())
}

// selfUpdateParts are what addSelfUpdate needs of the running agent.
type selfUpdateParts struct {
	store      *selfupdate.Store
	registries *registry.Registry
	node       string
	labels     map[string]string // the node's, which a release's waves select on
	args       []string          // tug run's
	health     func() error
	sources    selfupdate.Sources
	running    func() []string
}

// addSelfUpdate adds the updater (with --self-update-oci or
// --self-update-url) and the trial's gate (which waits unless this tug is
// on trial).
func addSelfUpdate(ctx context.Context, cfg config.Config, p selfUpdateParts, log *slog.Logger, components map[string]func(context.Context) error) error {
	log = log.With("component", "selfupdate")
	l := selfupdate.NewLayout(cfg.RootDir)
	fault := ""
	if selfUpdateTestFault == "gate" {
		fault = "test fault: the gate fails"
	}
	gate := selfupdate.NewGate(selfupdate.GateConfig{Layout: l, Store: p.store, Slot: runningSlot(), Window: cfg.SelfUpdateTrial,
		Health: p.health, Sources: p.sources, Running: p.running, Fault: fault, Log: log})
	components["self-update trial"] = gate.Run
	var src selfupdate.Source
	switch {
	case cfg.SelfUpdateOCI != "":
		src = selfupdate.NewOCISource(cfg.SelfUpdateOCI, ociResolver(ctx, cfg, p.registries, log), runtime.GOARCH)
	case cfg.SelfUpdateURL != "":
		src = selfupdate.NewURLSource(strings.ReplaceAll(cfg.SelfUpdateURL, "{arch}", runtime.GOARCH), &http.Client{Timeout: 30 * time.Minute})
	default:
		return nil
	}
	keys, err := bundle.LoadPublicKeys(cfg.ManifestVerifyKey)
	if err != nil {
		return err
	}
	// A release is fetched in the download or the update window,
	// installed ahead into the other slot, and switched to once the
	// device's wave and its update window are open.
	uw, err := window.Parse(cfg.UpdateWindow)
	if err != nil {
		return err
	}
	dw, err := window.Parse(cfg.DownloadWindow)
	if err != nil {
		return err
	}
	u := selfupdate.NewUpdater(selfupdate.UpdaterConfig{Layout: l, Store: p.store, Source: src, Keys: keys, Node: p.node, Labels: p.labels,
		Arch: runtime.GOARCH, Check: checkRelease(p.args), Period: cfg.OCICheckFrequency,
		Update: uw.ForNode(p.node), Download: dw.ForNode(p.node), Log: log})
	components["self-update"] = u.Run
	return nil
}

// runningContainerIDs lists the IDs of the running containers the PLEG
// sees.
func runningContainerIDs(all func() []pod.RuntimeContainer) func() []string {
	return func() []string {
		var ids []string
		for _, c := range all() {
			if c.State == pod.RunRunning {
				ids = append(ids, c.ID)
			}
		}
		return ids
	}
}

// watchdogHealth is the condition sdnotify feeds systemd's watchdog on:
// the PLEG healthy and the sync loop turned within stale.
func watchdogHealth(pleg interface{ Healthy() error }, loop interface{ LastIteration() time.Time }, stale time.Duration) func() error {
	return func() error {
		if err := pleg.Healthy(); err != nil {
			return err
		}
		if last := loop.LastIteration(); !last.IsZero() && time.Since(last) > stale {
			return fmt.Errorf("sync loop last turned %s ago", time.Since(last).Round(time.Second))
		}
		return nil
	}
}

// notifyFault is systemd's notify, without WATCHDOG=1 under the "hang"
// test fault.
func notifyFault() func(string) error {
	if selfUpdateTestFault != "hang" {
		return nil
	}
	return func(state string) error {
		if strings.Contains(state, "WATCHDOG=1") {
			return nil
		}
		_, err := daemon.SdNotify(false, state)
		return err
	}
}

// isRestart says whether tug run ended to restart into a switched binary.
func isRestart(err error) bool { return errors.Is(err, selfupdate.ErrRestart) }
