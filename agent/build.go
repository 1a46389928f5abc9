package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"time"

	containerd "github.com/containerd/containerd/v2/client"

	"github.com/prometheus/client_golang/prometheus"

	"tug/internal/api"
	"tug/internal/cgstats"
	"tug/internal/config"
	"tug/internal/cronjob"
	"tug/internal/devices"
	"tug/internal/events"
	"tug/internal/imagehooks"
	"tug/internal/images"
	"tug/internal/lifecycle"
	"tug/internal/network"
	"tug/internal/pleg"
	"tug/internal/podconfig"
	"tug/internal/podlogs"
	"tug/internal/podplan"
	"tug/internal/podruntime"
	"tug/internal/podstatus"
	"tug/internal/podview"
	"tug/internal/policy"
	"tug/internal/prober"
	"tug/internal/qos"
	"tug/internal/reclaim/eviction"
	"tug/internal/reconcile"
	"tug/internal/registry"
	"tug/internal/resize"
	"tug/internal/rollout"
	"tug/internal/sdnotify"
	"tug/internal/selfupdate"
	"tug/internal/source"
	"tug/internal/timefloor"
	"tug/internal/tuglog"
	"tug/internal/userns"
	"tug/internal/volume"
	"tug/internal/windowgate"
)

// The stages of runAgent, each a function that takes what the stages
// before it made and returns its own part; the components to run are
// collected in one map by name.

// host is what tug knows of the machine it runs on.
type host struct {
	name string       // --hostname-override, or the host's name
	node *policy.Node // its labels and taints
	self string       // tug's own path: the log driver's binary
	// runtimeClasses are --runtime-class's, checked (node.RuntimeClasses
	// names them for admission).
	runtimeClasses map[string]podruntime.RuntimeClass
}

// inputs are what the configuration files and the host's state give, read
// before anything on the host changes.
type inputs struct {
	podNet     *network.Pods
	cgroups    *qos.Manager
	thresholds []eviction.Threshold
	src        sources
	status     *statusLink // nil without --status-url
	self       *selfupdate.Store
}

// sources are the pod store and the sources that feed it.
type sources struct {
	store      *podconfig.Store
	cron       *cronjob.Scheduler // between the sources and the store
	gate       *windowgate.Gate   // between the sources and cron: holds updates for their window
	prefetch   *imagePrefetch     // the gate's; its image manager is set by connectRuntime
	dir        *source.Dir
	web        *source.HTTP // nil without --manifest-url
	oci        []*source.OCI
	names      []string          // every source, the file source first
	levels     map[string]string // each source's admission level
	registries *registry.Registry
}

// telemetry is one metrics registry for every component (served on
// /metrics) and one event ring (tug events, GET /events).
type telemetry struct {
	registry *prometheus.Registry
	ring     *events.Ring
	// floor judges the clock: the node's ClockBehind condition, and what
	// the reporters hold while the clock is behind.
	floor *timefloor.Floor
}

// timeFloorFile, under --root-dir, holds the latest time tug trusted.
const timeFloorFile = "timefloor"

// runtimeParts are containerd, through podruntime, and the allocators
// whose holdings the containers confirm.
type runtimeParts struct {
	rt      *podruntime.Runtime
	images  *images.Manager
	volumes *volume.Manager
	logs    *podlogs.Pumps // the file log drivers' converter; nil with the binary driver
	devs    *devices.Manager
	userns  *userns.Allocator
	room    *imageRoom // what pulls check the image filesystem with
}

// nodeParts are what tug keeps on the host: the pods' pinned namespaces
// and the PLEG's view of the containers.
type nodeParts struct {
	sandbox   *network.Namespaces
	lifecycle *pleg.PLEG
}

// control is the sync loop and what steers it.
type control struct {
	loop     *reconcile.Loop
	probes   *prober.Manager
	rollouts *rollout.Controller
	pids     *qos.PidsWatch
	view     podstatus.Served
	pressure *pressureRef
}

// reclaim is what frees the node's resources, and the cgroup reader its
// eviction messages, /metrics and /stats share (nil when cgroups cannot be
// read).
type reclaim struct {
	evictions *eviction.Manager
	cgroups   *cgstats.Reader
	cgErr     error
}

// startLogging returns tug's logger and sets the Go runtime's knobs the
// environment leaves alone.
func startLogging(cfg config.Config, stderr io.Writer) *slog.Logger {
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
	return log
}

// readHost finds the node's name, labels and taints, and tug's own path.
func readHost(cfg config.Config, log *slog.Logger) (host, error) {
	h := host{name: cfg.HostnameOverride}
	var err error
	if h.name == "" {
		if h.name, err = os.Hostname(); err != nil {
			return host{}, fmt.Errorf("host name: %w", err)
		}
	}
	if h.node, err = newNode(cfg, h.name); err != nil {
		return host{}, err
	}
	if h.runtimeClasses, err = runtimeClasses(cfg); err != nil {
		return host{}, err
	}
	h.node.RuntimeClasses = make(map[string]bool, len(h.runtimeClasses))
	for name := range h.runtimeClasses {
		h.node.RuntimeClasses[name] = true
	}
	log.Info("node labels and taints", "labels", h.node.Labels, "taints", h.node.Taints)
	if h.self, err = os.Executable(); err != nil {
		return host{}, fmt.Errorf("find tug's own path for the log driver: %w", err)
	}
	return h, nil
}

// readInputs reads the pod network's, the cgroups', eviction's, the
// sources' and the status URL's settings and files.
func readInputs(ctx context.Context, cfg config.Config, h host, log *slog.Logger) (inputs, error) {
	var in inputs
	var err error
	if in.podNet, err = newPodNetwork(cfg, log.With("component", "network")); err != nil {
		return inputs{}, err
	}
	if in.cgroups, err = newCgroups(cfg, log.With("component", "qos")); err != nil {
		return inputs{}, err
	}
	if in.thresholds, err = evictionThresholds(cfg); err != nil {
		return inputs{}, err
	}
	if in.src, err = buildSources(ctx, cfg, h, log); err != nil {
		return inputs{}, err
	}
	in.self = openSelfUpdate(cfg, log)
	if cfg.StatusURL != "" {
		if in.status, err = newStatusLink(cfg, h.name, log.With("component", "status")); err != nil {
			return inputs{}, err
		}
	}
	return in, nil
}

// buildSources builds the pod store and its sources: the manifest
// directory, the URL and the OCI references, each with its admission
// level.
func buildSources(ctx context.Context, cfg config.Config, h host, log *slog.Logger) (sources, error) {
	s := sources{store: podconfig.New(), registries: newRegistries(cfg)}
	// Every source reports through the CronJob scheduler, which adds the
	// runs of its CronJobs as its own pods.
	s.cron = cronjob.New(cronjob.Config{Sink: s.store, StateFile: filepath.Join(cfg.RootDir, "cronjob", "state.json"),
		Log: log.With("component", "cronjob")})
	// Every source reports through the window gate, which holds its
	// updates until the update window opens.
	var err error
	var dirName string
	if s.gate, s.prefetch, err = newWindowGate(cfg, h.name, h.node.Labels, s.cron, func() string { return dirName }, log.With("component", "windows")); err != nil {
		return sources{}, err
	}
	s.dir = source.NewDir(source.DirConfig{
		Path:     cfg.PodManifestPath,
		Hostname: h.name,
		Rescan:   cfg.FileCheckFrequency,
		Log:      log,
	}, s.gate)
	dirName = s.dir.Name()
	s.names = []string{s.dir.Name()}
	s.levels = map[string]string{s.dir.Name(): cfg.FilePolicy}
	if cfg.ManifestURL != "" {
		if s.web, err = newHTTPSource(cfg, h.name, s.gate, log); err != nil {
			return sources{}, err
		}
		s.names = append(s.names, s.web.Name())
		s.levels[s.web.Name()] = cfg.URLPolicy
	}
	if s.oci, err = newOCISources(ctx, cfg, s.registries, h.name, s.gate, log); err != nil {
		return sources{}, err
	}
	for _, o := range s.oci {
		s.names = append(s.names, o.Name())
		s.levels[o.Name()] = cfg.OCIPolicy
	}
	return s, nil
}

// connectRuntime connects to containerd with the device and user-namespace
// allocators, restores what the containers hold, and imports the image
// directory's archives before any pod starts, so that an offline device
// never tries to pull what it was given.
func connectRuntime(ctx context.Context, cfg config.Config, h host, in inputs, tel telemetry, log *slog.Logger, closers *[]func()) (runtimeParts, error) {
	var rp runtimeParts
	var err error
	if rp.devs, err = newDevices(cfg, log.With("component", "devices")); err != nil {
		return runtimeParts{}, err
	}
	*closers = append(*closers, func() { rp.devs.Close() })
	journalOut, err := containerJournal(cfg.ContainerLogDriver, journalSocket)
	if err != nil {
		return runtimeParts{}, err
	}
	if rp.userns, err = newUserNamespaces(cfg, log.With("component", "userns")); err != nil {
		return runtimeParts{}, err
	}
	if err := rp.connect(ctx, cfg, h, in, journalOut, tel, log); err != nil {
		return runtimeParts{}, err
	}
	*closers = append(*closers, func() { rp.rt.Close() })
	// What the containers hold is theirs, whatever the allocation files
	// say (a power cut may have damaged them): recorded before any pod is
	// admitted or given a block.
	held, err := readHoldings(ctx, rp.rt)
	if err != nil {
		return runtimeParts{}, err
	}
	if err := rp.userns.Restore(held.idmaps); err != nil {
		log.Warn("restoring user namespace allocations", "file", filepath.Join(cfg.RootDir, usernsStateFile), "err", err)
	}
	if err := rp.devs.Restore(held.devices); err != nil {
		log.Warn("restoring device allocations", "file", filepath.Join(cfg.RootDir, devicesStateFile), "err", err)
	}
	// The runs of CronJobs are the containers' too: a lost or damaged
	// cronjob state is rebuilt from them before any source reports, so
	// that no run's pod is removed as an orphan nor its slot run again.
	runs, err := readCronJobRuns(ctx, rp.rt)
	if err != nil {
		return runtimeParts{}, err
	}
	in.src.cron.Restore(runs)
	registerLogMetrics(tel.registry, rp.logs)
	if err := rp.images.ImportArchives(ctx); err != nil {
		log.Warn("importing image archives", "err", err)
	}
	return rp, nil
}

// connect connects to containerd (waiting for it), then builds the image
// and volume managers, the log converter, and the runtime on them.
func (rp *runtimeParts) connect(ctx context.Context, cfg config.Config, h host, in inputs, journalOut podlogs.JournalSender, tel telemetry, log *slog.Logger) error {
	rlog := log.With("component", "podruntime")
	client, err := podruntime.Dial(ctx, cfg.ContainerdAddress, cfg.ContainerdNamespace, rlog)
	if err != nil {
		return err
	}
	rp.room = &imageRoom{thresholds: in.thresholds, rootDir: cfg.RootDir}
	rp.images = images.New(images.Config{
		Client: client, Namespace: cfg.ContainerdNamespace, Snapshotter: podruntime.DefaultSnapshotter,
		RootDir: cfg.RootDir, ImageDir: cfg.ImageDir, Log: log.With("component", "images"), Recorder: tel.ring,
		PullProgressDeadline: cfg.ImagePullProgressDeadline, PullTimeout: cfg.ImagePullTimeout,
		PullOffline: cfg.ImagePullOffline, Registry: in.src.registries, Room: rp.room,
	})
	rp.room.images = rp.images
	in.src.prefetch.images = rp.images
	rp.volumes = volume.New(volume.Config{RootDir: cfg.RootDir, NodeName: h.name,
		ResolvConf: cfg.ResolvConf, FileSource: in.src.dir.Name(), Log: log.With("component", "volume"),
		Snapshots: client.SnapshotService(podruntime.DefaultSnapshotter), Namespace: cfg.ContainerdNamespace, Images: rp.images})
	rp.volumes.RemoveStaleStaging()
	if cfg.ContainerLogDriver != podruntime.LogDriverBinary {
		rp.logs = podlogs.NewPumps(podlogs.PumpsConfig{RootDir: cfg.RootDir,
			MaxSize: cfg.ContainerLogMaxSize, MaxFiles: cfg.ContainerLogMaxFiles, Log: log.With("component", "logs"),
			Journal: journalOut, NoFile: cfg.ContainerLogDriver == podruntime.LogDriverJournald})
	}
	if rp.rt, err = podruntime.New(runtimeConfig(cfg, h, client, *rp, tel, rlog)); err != nil {
		client.Close()
		return err
	}
	return nil
}

// runtimeConfig is podruntime's configuration.
func runtimeConfig(cfg config.Config, h host, client *containerd.Client, rp runtimeParts, tel telemetry, log *slog.Logger) podruntime.Config {
	c := podruntime.Config{
		Client:      client,
		Images:      rp.images,
		Volumes:     rp.volumes,
		Address:     cfg.ContainerdAddress,
		Namespace:   cfg.ContainerdNamespace,
		RootDir:     cfg.RootDir,
		LogsDir:     cfg.PodLogsDir,
		LoggerPath:  h.self,
		LogMaxSize:  cfg.ContainerLogMaxSize,
		LogMaxFiles: cfg.ContainerLogMaxFiles,
		LogDriver:   cfg.ContainerLogDriver,
		Log:         log,
		Recorder:    tel.ring,

		AllowPrivileged:          cfg.AllowPrivileged,
		SeccompProfileRoot:       cfg.SeccompProfileRoot,
		DefaultSeccompUnconfined: cfg.DefaultSeccomp == "unconfined",
		AppArmor:                 appArmorEnabled(),
		ShimGrouping:             cfg.ShimGrouping,
		RuntimeClasses:           h.runtimeClasses,
		Devices:                  rp.devs,
		UserNamespaces:           rp.userns,
	}
	if rp.logs != nil {
		c.Logs = rp.logs
	}
	return c
}

// runLogs converts the output of the containers that use a file log
// driver into their CRI logs (and the journal) until ctx ends; with the
// binary driver it only waits for ctx.
func (rp runtimeParts) runLogs(ctx context.Context) error {
	if rp.logs == nil {
		<-ctx.Done()
		return nil
	}
	return rp.logs.Run(ctx, rp.rt.LogTasks())
}

// initNode sets up the host's part: the pinned namespaces' directory, the
// pod network (whose sockets hold the hostPorts until tug stops) and the
// cgroup tree; then the PLEG's first relist fills its cache before
// anything reads it, so that housekeeping and status see the containers a
// previous tug left.
func initNode(ctx context.Context, cfg config.Config, in inputs, rp runtimeParts, tel telemetry, log *slog.Logger, closers *[]func()) (nodeParts, error) {
	np := nodeParts{sandbox: network.NewNamespaces(cfg.RunDir, log.With("component", "network"))}
	if err := np.sandbox.Init(); err != nil {
		return nodeParts{}, err
	}
	if err := in.podNet.Init(ctx); err != nil {
		return nodeParts{}, err
	}
	*closers = append(*closers, func() { in.podNet.Close() })
	if err := in.cgroups.Init(ctx); err != nil {
		return nodeParts{}, err
	}
	np.lifecycle = pleg.New(pleg.Config{Lister: rp.rt, Period: cfg.PLEGRelistPeriod, Log: log.With("component", "pleg"), Registerer: tel.registry})
	if err := np.lifecycle.Relist(ctx); err != nil {
		log.Warn("first relist", "err", err)
	}
	// A pod defined by both runs from the file: the device owner's word.
	in.src.store.SetSourceOrder(in.src.names...)
	return np, nil
}

// buildControl builds the sync loop, its prober, the rollout controller
// (whose pins go into the store before any source reports: a spec that
// failed before a restart never starts again) and the pids watch, and the
// status view they make.
func buildControl(cfg config.Config, h host, in inputs, rp runtimeParts, np nodeParts, tel telemetry, log *slog.Logger) (control, error) {
	c := control{pressure: &pressureRef{}}
	// The prober asks the loop for a sync when a liveness probe fails.
	var resync func(uid string)
	c.probes = prober.New(prober.Config{
		Exec:       rp.rt.Execer().ExecSync,
		Notify:     func(uid string) { resync(uid) },
		Events:     tel.ring,
		Registerer: tel.registry,
		Log:        log.With("component", "prober"),
	})
	c.loop = reconcile.New(loopConfig(cfg, h, in, rp, np, c, tel, log))
	resync = c.loop.Resync
	in.src.cron.Attach(c.loop, tel.ring)
	store := in.src.store
	c.view = podstatus.Served{Store: store, Loop: c.loop, Pulls: rp.images, ImagesFromCache: rp.images, Waits: gateWaits(in.src.gate), Waves: gateWaves(in.src.gate)}
	var err error
	c.rollouts, err = rollout.New(rollout.Config{
		Dir:        filepath.Join(cfg.RootDir, "rollout"),
		MinReady:   cfg.RolloutMinReady,
		Timeout:    cfg.RolloutTimeout,
		Store:      store,
		Pods:       c.loop,
		Events:     tel.ring,
		Registerer: tel.registry,
		Log:        log.With("component", "rollout"),
	})
	if err != nil {
		return control{}, err
	}
	store.SetPins(c.rollouts.Pins())
	c.view.Rollouts = c.rollouts
	c.pids = qos.NewPidsWatch(store, in.cgroups, tel.ring, log.With("component", "pids"), 2*time.Second)
	c.view.PIDLimits = c.pids
	if in.src.web != nil || len(in.src.oci) > 0 {
		c.view.Fetch = map[string]func() podview.FetchStatus{}
	}
	if in.src.web != nil {
		c.view.Fetch[in.src.web.Name()] = in.src.web.Status
	}
	for _, o := range in.src.oci {
		c.view.Fetch[o.Name()] = o.Status
	}
	tel.registry.MustRegister(newWaveMetrics(c.view.Manifests))
	return c, nil
}

// loopConfig is the sync loop's configuration: the runtime, the host's
// parts, the store, the admission policy and the loop's collaborators.
func loopConfig(cfg config.Config, h host, in inputs, rp runtimeParts, np nodeParts, c control, tel telemetry, log *slog.Logger) reconcile.Config {
	var cache reconcile.ContainerCache = np.lifecycle
	if cfg.TestFaultWedgeSyncLoop > 0 {
		log.Warn("test fault: the sync loop will wedge", "after", cfg.TestFaultWedgeSyncLoop)
		cache = wedgeCache{PLEG: np.lifecycle, at: time.Now().Add(cfg.TestFaultWedgeSyncLoop)}
	}
	pl := newPolicy(cfg, in.src.levels, h.node)
	if in.src.web != nil {
		pl.AllowedDevices = map[string][]string{in.src.web.Name(): cfg.URLAllowedDevices}
	}
	pl.RequireUserNamespaces = requiredUserNamespaces(cfg, in.src.dir.Name(), in.src.web)
	limitOCISources(pl, cfg, in.src.oci)
	return reconcile.Config{
		Runtime: rp.rt, Sandbox: np.sandbox, Network: in.podNet, Cgroups: in.cgroups, Cache: cache,
		Desired: in.src.store, Sources: in.src.names, Admission: admission{policy: pl, devices: rp.devs},
		Updates: in.src.store.Updates(), Events: np.lifecycle.Events(),
		ResyncPeriod: cfg.SyncFrequency, MaxPods: cfg.MaxPods,
		Backoff: &podplan.CrashBackoff{
			Initial: cfg.CrashLoopBackOffInitial,
			Max:     cfg.CrashLoopBackOffMax,
			Reset:   cfg.CrashLoopBackOffReset,
		},
		Log: log.With("component", "reconcile"), Registerer: tel.registry, Recorder: tel.ring,
		Claims: in.src.store, ClaimDirs: rp.volumes, PodDirs: rp.rt,
		Hooks: []reconcile.Hook{
			// A pod whose device is gone waits for it instead of crash-looping.
			rp.devs,
			c.probes,
			lifecycle.Handlers{Exec: rp.rt.Execer().ExecSync},
			// An update to an image that cannot be pulled keeps the old
			// container serving.
			imagehooks.PrePull{Pull: rp.rt.PullImage},
			// A container whose image a power cut damaged gets the image
			// repaired (removed, pulled or imported again).
			imagehooks.NewRepair(imagehooks.RepairConfig{Repair: rp.rt.RepairImage, Events: tel.ring, Log: log.With("component", "reconcile")}),
			// An evicted pod starts again once the node's pressure allows.
			c.pressure,
			// Containers whose resources alone change are resized in place.
			resize.Hook{Runtime: rp.rt, Cgroups: in.cgroups},
		},
		DeviceChanges: rp.devs.Changes(),
	}
}

// components are the loops that run pods: the store, the sources, the
// sync loop and what feeds it.
func (c control) components(in inputs, rp runtimeParts, np nodeParts) map[string]func(context.Context) error {
	m := map[string]func(context.Context) error{
		"pod store":      in.src.store.Run,
		"cronjobs":       in.src.cron.Run,
		"update windows": in.src.gate.Run,
		"rollout":        c.rollouts.Run,
		"pids limits":    c.pids.Run,
		"sync loop":      c.loop.Run,
		"prober":         c.probes.Run,
		"file source":    in.src.dir.Run,
		"image dir":      rp.images.Watch,
		"pleg":           np.lifecycle.Run,
		"container logs": rp.runLogs,
		"devices":        rp.devs.Run,
		"containerd events": func(ctx context.Context) error {
			return rp.rt.WatchEvents(ctx, np.lifecycle.Wake)
		},
	}
	if in.src.web != nil {
		m["http source"] = in.src.web.Run
	}
	for _, o := range in.src.oci {
		m["oci source "+o.Name()] = o.Run
	}
	return m
}

// addReclaim adds the image GC and the eviction manager (which the loop
// asks whether a pod may start).
func addReclaim(ctx context.Context, cfg config.Config, in inputs, rp runtimeParts, np nodeParts, c control, tel telemetry, log *slog.Logger,
	components map[string]func(context.Context) error) (reclaim, error) {
	imageGC, err := newImageGC(cfg, rp, in.src.store, np.lifecycle, in.src.names, tel.registry, log.With("component", "imagegc"))
	if err != nil {
		return reclaim{}, err
	}
	components["image gc"] = imageGC.Run
	var r reclaim
	r.cgroups, r.cgErr = cgstats.NewReader()
	if r.cgErr != nil {
		r.cgroups = nil
	}
	evPods := newEvictionPods(in.src.store, np.lifecycle, c.loop, rp, in.cgroups, r.cgroups, c.pressure)
	if r.evictions, err = newEviction(ctx, cfg, in.thresholds, evPods, imageGC, tel.registry, tel.ring, log.With("component", "eviction")); err != nil {
		return reclaim{}, err
	}
	c.pressure.m = r.evictions
	components["eviction manager"] = r.evictions.Run
	return r, nil
}

// addReporting adds what tells the world: the API (socket and health
// port), /metrics' collectors, the status reports, remote write, systemd's
// notifications, and --runonce's report.
func addReporting(cfg config.Config, h host, in inputs, rp runtimeParts, np nodeParts, c control, r reclaim, tel telemetry, log *slog.Logger, stdout io.Writer,
	components map[string]func(context.Context) error) error {
	if err := registerOCIMetrics(tel.registry, in.src.oci); err != nil {
		return err
	}
	if err := tel.registry.Register(selfUpdateCollector{in.self}); err != nil {
		return fmt.Errorf("self-update metrics: %w", err)
	}
	srcStatus := sourceStatus{store: in.src.store, sources: in.src.names, fetch: c.view.Fetch}
	if r.cgErr != nil {
		log.Warn("no per-container usage on /metrics", "err", r.cgErr)
	} else {
		cgstats.NewCollector(np.lifecycle, r.cgroups, tel.registry, log.With("component", "cgstats"))
	}
	server := &api.Server{Status: c.view, Health: health{pleg: np.lifecycle, runtime: rp.rt}, Log: log.With("component", "api"),
		Node: nodeView{name: h.name, m: r.evictions, devices: rp.devs, floor: tel.floor}, LogsDir: cfg.PodLogsDir,
		Journal:  logsJournal(cfg.ContainerLogDriver, log),
		Registry: tel.registry, Sources: srcStatus, Events: tel.ring, Rollouts: c.rollouts,
		Exec: execer{rp.rt.Execer()}, Restarts: c.loop}
	if r.cgErr == nil {
		server.Stats = podStats{containers: np.lifecycle, cgroups: r.cgroups}
	}
	if in.status != nil {
		rep, err := in.status.sender(cfg, h.name, c.view, server.Node, c.rollouts, selfUpdateDoc(in.self, cfg.SelfUpdateOCI != "" || cfg.SelfUpdateURL != ""), tel.registry, clockBehind(tel.floor), log.With("component", "status"))
		if err != nil {
			return err
		}
		components["status report"] = rep.Run
	}
	pusher, err := newRemoteWriter(cfg, h.node, tel.registry, clockBehind(tel.floor), log.With("component", "remotewrite"))
	if err != nil {
		return err
	}
	if pusher != nil {
		components["remote write"] = pusher.Run
	}
	components["page out executable"] = codeTrimmer{after: cfg.PageOutExecutableAfter, log: log.With("component", "trim")}.Run
	components["systemd notify"] = sdnotify.New(sdnotify.Config{Sources: srcStatus, Loop: c.loop, PLEG: np.lifecycle, Pods: c.view,
		LoopStale: loopStale(cfg.SyncFrequency), Log: log.With("component", "systemd"), Notify: notifyFault()}).Run
	healthAddr := ""
	if cfg.HealthzPort > 0 {
		healthAddr = fmt.Sprintf("%s:%d", cfg.HealthzBindAddress, cfg.HealthzPort)
	}
	components["api"] = func(ctx context.Context) error { return server.Serve(ctx, cfg.SocketPath(), healthAddr) }
	if cfg.RunOnce {
		components["runonce"] = func(ctx context.Context) error {
			return runOnce(ctx, cfg, in.src.store, in.src.dir.Name(), c.view, stdout)
		}
	}
	return nil
}

// clockBehind is the reporters' Hold: true while the clock is below the
// time floor.
func clockBehind(f *timefloor.Floor) func() bool {
	return func() bool { return !f.Sane() }
}
