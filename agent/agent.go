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
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	clog "github.com/containerd/log"

	"tug/internal/api"
	"tug/internal/bundle"
	"tug/internal/cgstats"
	"tug/internal/config"
	"tug/internal/devices"
	"tug/internal/events"
	"tug/internal/network"
	"tug/internal/pleg"
	"tug/internal/podconfig"
	"tug/internal/podruntime"
	"tug/internal/podview"
	"tug/internal/policy"
	"tug/internal/prober"
	"tug/internal/qos"
	"tug/internal/reconcile"
	"tug/internal/redact"
	"tug/internal/rollout"
	"tug/internal/sdnotify"
	"tug/internal/source"
	"tug/internal/tuglog"
)

// Compile-time checks that the concrete types fill the roles the consumers
// declare.
var (
	_ reconcile.Runtime        = (*podruntime.Runtime)(nil)
	_ reconcile.Sandbox        = (*network.Namespaces)(nil)
	_ reconcile.Network        = (*network.Pods)(nil)
	_ reconcile.Cgroups        = (*qos.Manager)(nil)
	_ reconcile.ContainerCache = (*pleg.PLEG)(nil)
	_ reconcile.Desired        = (*podconfig.Store)(nil)
	_ reconcile.Admission      = (*policy.Policy)(nil)
	_ reconcile.Admission      = admission{}
	_ podruntime.Devices       = (*devices.Manager)(nil)
	_ reconcile.Devices        = (*devices.Manager)(nil)
	_ pleg.Lister              = (*podruntime.Runtime)(nil)
	_ source.Sink              = (*podconfig.Store)(nil)
	_ reconcile.Snapshot       = (*podconfig.Store)(nil)
	_ reconcile.PodStatuser    = (*reconcile.Loop)(nil)
	_ reconcile.PullMessages   = (*podruntime.Runtime)(nil)
	_ api.StatusSource         = reconcile.View{}
	_ api.HealthChecker        = health{}
	_ api.EventSource          = (*events.Ring)(nil)
	_ api.SourceLister         = sourceStatus{}
	_ api.Restarter            = (*reconcile.Loop)(nil)
	_ api.Execer               = execer{}
	_ api.StatsSource          = podStats{}
)

// agentGCPercent is the agent's GOGC unless the environment sets one.
const agentGCPercent = 50

// agentMaxProcs is the agent's GOMAXPROCS unless the environment sets one.
const agentMaxProcs = 1

// runAgent is "tug run": it builds the components and runs them until ctx
// ends. Stopping tug leaves the pods running.
func runAgent(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := config.Parse("tug run", args)
	if err != nil {
		return err
	}
	log := tuglog.New(stderr, cfg.LogLevel, os.Getenv("JOURNAL_STREAM"))
	containerdLogLevel(cfg.LogLevel)
	if os.Getenv("GOGC") == "" {
		// Half Go's default heap headroom: an idle agent allocates little
		// (so the extra collections cost no measurable CPU) and keeps about
		// 5 MiB less (docs/decisions.md, "The agent's own pages").
		debug.SetGCPercent(agentGCPercent)
	}
	if os.Getenv("GOMAXPROCS") == "" {
		// One processor for the agent's Go code: its work is waiting for
		// containerd, netlink and files, and with more, nearly every
		// wake-up of a goroutine also woke a thread to look for work: a
		// fifth of the idle agent's CPU (docs/decisions.md, "GOMAXPROCS 1 for
		// the agent").
		runtime.GOMAXPROCS(agentMaxProcs)
	}
	log.Info("starting tug", "version", buildVersion(), "config", fmt.Sprintf("%+v", cfg.Redacted()))

	hostname := cfg.HostnameOverride
	if hostname == "" {
		if hostname, err = os.Hostname(); err != nil {
			return fmt.Errorf("host name: %w", err)
		}
	}
	node, err := newNode(cfg, hostname)
	if err != nil {
		return err
	}
	log.Info("node labels and taints", "labels", node.Labels, "taints", node.Taints)
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find tug's own path for the log driver: %w", err)
	}

	// Everything that reads configuration files or the host's state is
	// built first, so that a bad setting fails before anything on the
	// host is created or changed (the Init calls below do that).
	netLog := log.With("component", "network")
	podNet, err := newPodNetwork(cfg, netLog)
	if err != nil {
		return err
	}
	cgroups, err := newCgroups(cfg, log.With("component", "qos"))
	if err != nil {
		return err
	}
	thresholds, err := evictionThresholds(cfg)
	if err != nil {
		return err
	}
	store := podconfig.New()
	dir := source.NewDir(source.DirConfig{
		Path:     cfg.PodManifestPath,
		Hostname: hostname,
		Rescan:   cfg.FileCheckFrequency,
		Log:      log,
	}, store)
	sources := []string{dir.Name()}
	levels := map[string]string{dir.Name(): cfg.FilePolicy}
	var web *source.HTTP
	if cfg.ManifestURL != "" {
		if web, err = newHTTPSource(cfg, hostname, store, log); err != nil {
			return err
		}
		sources = append(sources, web.Name())
		levels[web.Name()] = cfg.URLPolicy
	}
	registries := newRegistries(cfg)
	ociSources, err := newOCISources(ctx, cfg, registries, hostname, store, log)
	if err != nil {
		return err
	}
	for _, o := range ociSources {
		sources = append(sources, o.Name())
		levels[o.Name()] = cfg.OCIPolicy
	}
	var status *statusLink
	if cfg.StatusURL != "" {
		if status, err = newStatusLink(cfg, hostname, log.With("component", "status")); err != nil {
			return err
		}
	}

	// One metrics registry for every component (served on /metrics) and
	// one event ring (tug events, GET /events).
	registry := newRegistry()
	ring := events.New(events.DefaultSize, nil, hostname)

	devs, err := newDevices(cfg, log.With("component", "devices"))
	if err != nil {
		return err
	}
	defer devs.Close()
	journalOut, err := containerJournal(cfg.ContainerLogDriver, journalSocket)
	if err != nil {
		return err
	}
	usernsIDs, err := newUserNamespaces(cfg, log.With("component", "userns"))
	if err != nil {
		return err
	}
	rt, err := podruntime.Connect(ctx, podruntime.Config{
		Address:              cfg.ContainerdAddress,
		Namespace:            cfg.ContainerdNamespace,
		RootDir:              cfg.RootDir,
		LogsDir:              cfg.PodLogsDir,
		ImageDir:             cfg.ImageDir,
		AllowPrivileged:      cfg.AllowPrivileged,
		LoggerPath:           self,
		LogMaxSize:           cfg.ContainerLogMaxSize,
		LogMaxFiles:          cfg.ContainerLogMaxFiles,
		LogDriver:            cfg.ContainerLogDriver,
		Journal:              journalOut,
		ResolvConf:           cfg.ResolvConf,
		PullProgressDeadline: cfg.ImagePullProgressDeadline,
		PullTimeout:          cfg.ImagePullTimeout,
		PullOffline:          cfg.ImagePullOffline,
		Registry:             registries,
		Log:                  log.With("component", "podruntime"),
		Recorder:             ring,

		SeccompProfileRoot:       cfg.SeccompProfileRoot,
		NodeName:                 hostname,
		DefaultSeccompUnconfined: cfg.DefaultSeccomp == "unconfined",
		AppArmor:                 appArmorEnabled(),
		ShimGrouping:             cfg.ShimGrouping,
		FileSource:               dir.Name(),
		Devices:                  devs,
		UserNamespaces:           usernsIDs,
	})
	if err != nil {
		return err
	}
	defer rt.Close()
	// What the containers hold is theirs, whatever the allocation files
	// say (a power cut may have damaged them): recorded before any pod is
	// admitted or given a block.
	held, err := readHoldings(ctx, cfg)
	if err != nil {
		return err
	}
	if err := usernsIDs.Restore(held.idmaps); err != nil {
		log.Warn("restoring user namespace allocations", "file", filepath.Join(cfg.RootDir, usernsStateFile), "err", err)
	}
	if err := devs.Restore(held.devices); err != nil {
		log.Warn("restoring device allocations", "file", filepath.Join(cfg.RootDir, devicesStateFile), "err", err)
	}
	registerLogMetrics(registry, rt)
	// Archives already in the image directory are imported before any pod
	// starts, so an offline device never tries to pull what it was given.
	if err := rt.ImportArchives(ctx); err != nil {
		log.Warn("importing image archives", "err", err)
	}

	sandbox := network.NewNamespaces(cfg.RunDir, netLog)
	if err := sandbox.Init(); err != nil {
		return err
	}
	if err := podNet.Init(ctx); err != nil {
		return err
	}
	defer podNet.Close() // the sockets holding hostPorts
	if err := cgroups.Init(ctx); err != nil {
		return err
	}
	lifecycle := pleg.New(pleg.Config{Lister: rt, Period: cfg.PLEGRelistPeriod, Log: log.With("component", "pleg"), Registerer: registry})
	// The first relist fills the cache before anything reads it, so that
	// housekeeping and status see the containers a previous tug left.
	if err := lifecycle.Relist(ctx); err != nil {
		log.Warn("first relist", "err", err)
	}
	// A pod defined by both runs from the file: the device owner's word.
	store.SetSourceOrder(sources...)
	pressure := &pressureRef{}
	var cache reconcile.ContainerCache = lifecycle
	if cfg.TestFaultWedgeSyncLoop > 0 {
		log.Warn("test fault: the sync loop will wedge", "after", cfg.TestFaultWedgeSyncLoop)
		cache = wedgeCache{PLEG: lifecycle, at: time.Now().Add(cfg.TestFaultWedgeSyncLoop)}
	}
	// The prober asks the loop for a sync when a liveness probe fails; the
	// loop is built below.
	var resync func(uid string)
	probes := prober.New(prober.Config{
		Exec:       rt.ExecSync,
		Notify:     func(uid string) { resync(uid) },
		Events:     ring,
		Registerer: registry,
		Log:        log.With("component", "prober"),
	})
	pl := newPolicy(cfg, levels, node)
	if web != nil {
		pl.AllowedDevices = map[string][]string{web.Name(): cfg.URLAllowedDevices}
	}
	pl.RequireUserNamespaces = requiredUserNamespaces(cfg, dir.Name(), web)
	limitOCISources(pl, cfg, ociSources)
	loop := reconcile.New(reconcile.Config{
		Runtime:      rt,
		Sandbox:      sandbox,
		Network:      podNet,
		Cgroups:      cgroups,
		Cache:        cache,
		Desired:      store,
		Sources:      sources,
		Admission:    admission{policy: pl, devices: devs},
		Updates:      store.Updates(),
		Events:       lifecycle.Events(),
		ResyncPeriod: cfg.SyncFrequency,
		MaxPods:      cfg.MaxPods,
		Pressure:     pressure,
		Backoff: &reconcile.CrashBackoff{
			Initial: cfg.CrashLoopBackOffInitial,
			Max:     cfg.CrashLoopBackOffMax,
			Reset:   cfg.CrashLoopBackOffReset,
		},
		Log:        log.With("component", "reconcile"),
		Registerer: registry,
		Recorder:   ring,
		Claims:     store,
		ClaimDirs:  rt,
		Prober:     probes,
		Hooks:      prober.Hooks{Exec: rt.ExecSync},
		PodDirs:    rt,
		Images:     rt,
		// A container whose image a power cut damaged gets the image
		// repaired (removed, pulled or imported again).
		ImageRepairer: rt,
		// Containers whose resources alone change are resized in place.
		Resizer:       rt,
		ResizeCgroups: cgroups,
		// A pod whose device is gone waits for it instead of crash-looping.
		Devices:       devs,
		DeviceChanges: devs.Changes(),
	})
	resync = loop.Resync
	view := reconcile.View{Store: store, Loop: loop, Pulls: rt, ImagesFromCache: rt}
	// The rollout controller's pins go into the store before any source
	// reports: a spec that failed before a restart never starts again.
	rollouts, err := rollout.New(rollout.Config{
		Dir:        filepath.Join(cfg.RootDir, "rollout"),
		MinReady:   cfg.RolloutMinReady,
		Timeout:    cfg.RolloutTimeout,
		Store:      store,
		Pods:       loop,
		Events:     ring,
		Registerer: registry,
		Log:        log.With("component", "rollout"),
	})
	if err != nil {
		return err
	}
	pins, filePins := rollouts.Pins()
	store.SetPins(pins, filePins)
	view.Rollouts = rollouts
	pidsWatch := qos.NewPidsWatch(store, cgroups, ring, log.With("component", "pids"), 2*time.Second)
	view.PIDLimits = pidsWatch
	components := map[string]func(context.Context) error{
		"pod store":   store.Run,
		"rollout":     rollouts.Run,
		"pids limits": pidsWatch.Run,
		"sync loop":   loop.Run,
		"prober":      probes.Run,
		"file source": dir.Run,
		"image dir":   rt.WatchImages,
		"pleg":        lifecycle.Run,
		"containerd events": func(ctx context.Context) error {
			return rt.WatchEvents(ctx, lifecycle.Wake)
		},
	}
	components["container logs"] = rt.RunLogs
	imageGC, err := newImageGC(cfg, rt, store, lifecycle, sources, registry, log.With("component", "imagegc"))
	if err != nil {
		return err
	}
	components["image gc"] = imageGC.Run
	components["devices"] = devs.Run
	reader, readerErr := cgstats.NewReader()
	var memory *cgstats.Reader // per-container memory for eviction's messages
	if readerErr == nil {
		memory = reader
	}
	evPods := newEvictionPods(store, lifecycle, loop, rt, cgroups, memory, pressure)
	evictions, err := newEviction(ctx, cfg, thresholds, evPods, imageGC, registry, ring, log.With("component", "eviction"))
	if err != nil {
		return err
	}
	pressure.m = evictions
	components["eviction manager"] = evictions.Run
	if web != nil {
		view.Fetch = map[string]func() podview.FetchStatus{web.Name(): web.Status}
		components["http source"] = web.Run
	}
	for _, o := range ociSources {
		if view.Fetch == nil {
			view.Fetch = map[string]func() podview.FetchStatus{}
		}
		view.Fetch[o.Name()] = o.Status
		components["oci source "+o.Name()] = o.Run
	}
	if err := registerOCIMetrics(registry, ociSources); err != nil {
		return err
	}
	srcStatus := sourceStatus{store: store, sources: sources, fetch: view.Fetch}
	if readerErr != nil {
		log.Warn("no per-container usage on /metrics", "err", readerErr)
	} else {
		cgstats.NewCollector(lifecycle, reader, registry, log.With("component", "cgstats"))
	}
	server := &api.Server{Status: view, Health: health{pleg: lifecycle, runtime: rt}, Log: log.With("component", "api"),
		Node: nodeView{name: hostname, m: evictions, devices: devs}, LogsDir: cfg.PodLogsDir,
		Journal:  logsJournal(cfg.ContainerLogDriver, log),
		Registry: registry, Sources: srcStatus, Events: ring, Rollouts: rollouts,
		Exec: execer{rt}, Restarts: loop}
	if readerErr == nil {
		server.Stats = podStats{containers: lifecycle, cgroups: reader}
	}
	if status != nil {
		rep, err := status.sender(cfg, hostname, view, server.Node, rollouts, registry, log.With("component", "status"))
		if err != nil {
			return err
		}
		components["status report"] = rep.Run
	}
	pusher, err := newRemoteWriter(cfg, node, registry, log.With("component", "remotewrite"))
	if err != nil {
		return err
	}
	if pusher != nil {
		components["remote write"] = pusher.Run
	}
	components["page out executable"] = codeTrimmer{after: cfg.PageOutExecutableAfter, log: log.With("component", "trim")}.Run
	components["systemd notify"] = sdnotify.New(sdnotify.Config{Sources: srcStatus, Loop: loop, PLEG: lifecycle, Pods: view,
		LoopStale: loopStale(cfg.SyncFrequency), Log: log.With("component", "systemd")}).Run
	healthAddr := ""
	if cfg.HealthzPort > 0 {
		healthAddr = fmt.Sprintf("%s:%d", cfg.HealthzBindAddress, cfg.HealthzPort)
	}

	components["api"] = func(ctx context.Context) error {
		return server.Serve(ctx, cfg.SocketPath(), healthAddr)
	}
	if cfg.RunOnce {
		components["runonce"] = func(ctx context.Context) error {
			return runOnce(ctx, cfg, store, dir.Name(), view, stdout)
		}
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

// execer runs tug exec's commands through podruntime.
type execer struct{ rt *podruntime.Runtime }

func (e execer) Exec(ctx context.Context, id string, cmd []string, s api.ExecStreams) (api.ExecProcess, error) {
	p, err := e.rt.Exec(ctx, id, cmd, podruntime.ExecStreams{Stdin: s.Stdin, Stdout: s.Stdout, Stderr: s.Stderr,
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
			if err != nil && !errors.Is(err, context.Canceled) {
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
