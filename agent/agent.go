package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	clog "github.com/containerd/log"

	"tug/internal/api"
	"tug/internal/bundle"
	"tug/internal/config"
	"tug/internal/devices"
	"tug/internal/events"
	"tug/internal/imagehooks"
	"tug/internal/images"
	"tug/internal/lifecycle"
	"tug/internal/network"
	"tug/internal/pleg"
	"tug/internal/podconfig"
	"tug/internal/podexec"
	"tug/internal/podruntime"
	"tug/internal/podstatus"
	"tug/internal/policy"
	"tug/internal/prober"
	"tug/internal/qos"
	"tug/internal/reconcile"
	"tug/internal/redact"
	"tug/internal/resize"
	"tug/internal/selfupdate"
	"tug/internal/source"
	"tug/internal/timefloor"
)

// Compile-time checks that the concrete types fill the roles the consumers
// declare.
var (
	_ reconcile.Runtime        = (*podruntime.Runtime)(nil)
	_ reconcile.Sandbox        = (*network.Namespaces)(nil)
	_ reconcile.Network        = (*network.Pods)(nil)
	_ reconcile.Cgroups        = (*qos.Manager)(nil)
	_ reconcile.ContainerCache = (*pleg.PLEG)(nil)
	_ reconcile.Ownership      = (*podconfig.Store)(nil)
	_ reconcile.Admission      = (*policy.Policy)(nil)
	_ reconcile.Admission      = admission{}
	_ podruntime.Devices       = (*devices.Manager)(nil)
	// Each hook implements the stages it is listed for: a hook that lost
	// a stage's method would be skipped at that stage without a word.
	_ reconcile.FactsHook       = (*devices.Manager)(nil)
	_ reconcile.ListedHook      = (*prober.Manager)(nil)
	_ reconcile.HealthHook      = (*prober.Manager)(nil)
	_ reconcile.ReadyHook       = (*prober.Manager)(nil)
	_ reconcile.RemovedHook     = (*prober.Manager)(nil)
	_ reconcile.PoststartHook   = lifecycle.Handlers{}
	_ reconcile.PrestopHook     = lifecycle.Handlers{}
	_ reconcile.PrestartHook    = imagehooks.PrePull{}
	_ reconcile.StartFailedHook = (*imagehooks.Repair)(nil)
	_ reconcile.ReadmitHook     = (*pressureRef)(nil)
	_ reconcile.ResizeHook      = resize.Hook{}
	_ resize.Runtime            = (*podruntime.Runtime)(nil)
	_ resize.Cgroups            = (*qos.Manager)(nil)
	_ pleg.Lister               = (*podruntime.Runtime)(nil)
	_ source.Sink               = (*podconfig.Store)(nil)
	_ podstatus.Snapshot        = (*podconfig.Store)(nil)
	_ podstatus.PodStatuser     = (*reconcile.Loop)(nil)
	_ podstatus.PullMessages    = (*images.Manager)(nil)
	_ api.StatusSource          = podstatus.Served{}
	_ api.HealthChecker         = health{}
	_ api.EventSource           = (*events.Ring)(nil)
	_ api.SourceLister          = sourceStatus{}
	_ api.Restarter             = (*reconcile.Loop)(nil)
	_ api.Execer                = execer{}
	_ api.StatsSource           = podStats{}
)

// agentGCPercent is the agent's GOGC unless the environment sets one.
const agentGCPercent = 50

// agentMaxProcs is the agent's GOMAXPROCS unless the environment sets one.
const agentMaxProcs = 1

// runAgent is "tug run": it builds the components and runs them until ctx
// ends. Stopping tug leaves the pods running. The stages run in order
// (build.go): what reads configuration files or the host's state comes
// first, so that a bad setting fails before anything on the host is
// created or changed; then containerd and the allocations the containers
// hold; then the host's namespaces, pod network and cgroups; then the sync
// loop and what steers it; then what reclaims resources and what reports.
func runAgent(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := config.Parse("tug run", args)
	if err != nil {
		return err
	}
	log := startLogging(cfg, stderr)
	h, err := readHost(cfg, log)
	if err != nil {
		return err
	}
	tel := telemetry{registry: newRegistry(), ring: events.New(events.DefaultSize, nil, h.name)}
	// The clock is judged first, so that a clock behind is said before
	// anything that stamps a time starts.
	tel.floor = timefloor.New(timefloor.Config{File: filepath.Join(cfg.RootDir, timeFloorFile), Build: builtAt(),
		Events: tel.ring, Log: log.With("component", "timefloor")})
	in, err := readInputs(ctx, cfg, h, log)
	if err != nil {
		return err
	}
	var closers []func()
	defer func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}()
	rp, err := connectRuntime(ctx, cfg, h, in, tel, log, &closers)
	if err != nil {
		return err
	}
	np, err := initNode(ctx, cfg, in, rp, tel, log, &closers)
	if err != nil {
		return err
	}
	ctl, err := buildControl(cfg, h, in, rp, np, tel, log)
	if err != nil {
		return err
	}
	components := ctl.components(in, rp, np)
	components["time floor"] = tel.floor.Run
	rc, err := addReclaim(ctx, cfg, in, rp, np, ctl, tel, log, components)
	if err != nil {
		return err
	}
	if err := addReporting(cfg, h, in, rp, np, ctl, rc, tel, log, stdout, components); err != nil {
		return err
	}
	if err := addSelfUpdate(ctx, cfg, selfUpdateParts{store: in.self, registries: in.src.registries, node: h.name, labels: h.node.Labels, args: args,
		health:  watchdogHealth(np.lifecycle, ctl.loop, loopStale(cfg.SyncFrequency)),
		sources: sourceStatus{store: in.src.store, sources: in.src.names, fetch: ctl.view.Fetch},
		running: runningContainerIDs(np.lifecycle.All)}, log, components); err != nil {
		return err
	}
	return runAll(ctx, log, components)
}

// loopStale is how long the sync loop may go without a turn before the
// systemd watchdog stops being fed: twice --sync-frequency, at least 20 s
// (the loop turns every 2 s for housekeeping when it is not stuck).
func loopStale(syncFrequency time.Duration) time.Duration {
	return max(2*syncFrequency, 20*time.Second)
}

// newHTTPSource builds the --manifest-url source. Its checkpoint lives
// under <root-dir>/checkpoints, named by a hash of the redacted URL (so a
// rotated token keeps it).
func newHTTPSource(cfg config.Config, hostname string, sink source.Sink, log *slog.Logger) (*source.HTTP, error) {
	header := http.Header{}
	if cfg.ManifestURLHeaderFile != "" {
		h, err := readHeaderFile(cfg.ManifestURLHeaderFile, "manifest URL", log)
		if err != nil {
			return nil, err
		}
		header = h
	}
	for _, h := range cfg.ManifestURLHeader {
		name, value, _ := strings.Cut(h, ":") // validated by config
		header.Add(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	keys, err := bundle.LoadPublicKeys(cfg.ManifestVerifyKey)
	if err != nil {
		return nil, err
	}
	checkpoint := checkpointPath(cfg.RootDir, redact.URL(cfg.ManifestURL))
	// Earlier versions named it by the raw URL and wrote the raw URL in it,
	// secrets included: it cannot be used (its URL is not the source's
	// name) and must not stay on disk.
	if old := checkpointPath(cfg.RootDir, cfg.ManifestURL); old != checkpoint {
		if err := os.Remove(old); err == nil {
			log.Info("removed the checkpoint of an earlier version, which held the URL's secrets", "path", old)
		} else if !errors.Is(err, os.ErrNotExist) {
			log.Warn("cannot remove the checkpoint of an earlier version, which holds the URL's secrets", "path", old, "err", err)
		}
	}
	return source.NewHTTP(source.HTTPConfig{
		URL:        cfg.ManifestURL,
		Header:     header,
		Period:     cfg.HTTPCheckFrequency,
		CAFile:     cfg.ManifestURLCA,
		CAReplace:  cfg.ManifestURLCAMode == "replace",
		ClientCert: cfg.ManifestURLClientCert,
		ClientKey:  cfg.ManifestURLClientKey,
		VerifyKeys: keys,
		Checkpoint: checkpoint,
		Hostname:   hostname,
		Log:        log,
	}, sink)
}

// checkpointPath is the URL source's checkpoint: <root-dir>/checkpoints/
// <first 8 bytes of sha256(name), hex>.json.
func checkpointPath(rootDir, name string) string {
	sum := sha256.Sum256([]byte(name))
	return filepath.Join(rootDir, "checkpoints", hex.EncodeToString(sum[:8])+".json")
}

// health is /healthz: the PLEG has relisted lately and containerd answers.
type health struct {
	pleg    *pleg.PLEG
	runtime *podruntime.Runtime
}

func (h health) Healthy(ctx context.Context) error {
	return errors.Join(h.pleg.Healthy(), h.runtime.Ping(ctx))
}

// execer runs tug exec's commands through podexec.
type execer struct{ ex *podexec.Execer }

func (e execer) Exec(ctx context.Context, id string, cmd []string, s api.ExecStreams) (api.ExecProcess, error) {
	p, err := e.ex.Exec(ctx, id, cmd, podexec.Streams{Stdin: s.Stdin, Stdout: s.Stdout, Stderr: s.Stderr,
		TTY: s.TTY, Width: s.Width, Height: s.Height})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// runAll runs each component until ctx ends or one of them returns; then it
// stops the others and returns the first failure, or nil when the one that
// returned first had finished its job (--runonce).
func runAll(ctx context.Context, log *slog.Logger, components map[string]func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for name, run := range components {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := run(ctx)
			if errors.Is(err, selfupdate.ErrRestart) {
				once.Do(func() { first = fmt.Errorf("%s: %w", name, err) })
				log.Info("stopping to restart into the self-update's binary", "component", name)
			} else if err != nil && !errors.Is(err, context.Canceled) {
				once.Do(func() { first = fmt.Errorf("%s: %w", name, err) })
				log.Error("component failed", "component", name, "err", err)
			}
			cancel()
		}()
	}
	wg.Wait()
	if first == nil {
		log.Info("tug stopped; pods keep running")
	}
	return first
}

// containerdLogLevel sets the level of containerd's client library, which
// logs to stderr through a logger of its own: its warnings and errors (a
// hosts.toml that does not parse, say) always, its informational lines
// (one per registry host a pull configures, ...) only when tug logs at
// debug.
func containerdLogLevel(level string) {
	l := "warn"
	if level == "debug" {
		l = "info"
	}
	_ = clog.SetLevel(l) // a fixed, valid level
}
