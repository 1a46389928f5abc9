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

	"tug/internal/api"
	"tug/internal/config"
	"tug/internal/network"
	"tug/internal/pleg"
	"tug/internal/pod"
	"tug/internal/podconfig"
	"tug/internal/podruntime"
	"tug/internal/policy"
	"tug/internal/qos"
	"tug/internal/reconcile"
	"tug/internal/redact"
	"tug/internal/source"
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
	_ pleg.Lister              = (*podruntime.Runtime)(nil)
	_ source.Sink              = (*podconfig.Store)(nil)
	_ reconcile.Snapshot       = (*podconfig.Store)(nil)
	_ reconcile.PodStatuser    = (*reconcile.Loop)(nil)
	_ api.StatusSource         = reconcile.View{}
	_ api.HealthChecker        = health{}
)

// runAgent is "tug run": it builds the components and runs them until ctx
// ends. Stopping tug leaves the pods running.
func runAgent(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := config.Parse("tug run", args)
	if err != nil {
		return err
	}
	log := newLogger(stderr, cfg.LogLevel)
	log.Info("starting tug", "version", version, "config", fmt.Sprintf("%+v", cfg.Redacted()))

	hostname := cfg.HostnameOverride
	if hostname == "" {
		if hostname, err = os.Hostname(); err != nil {
			return fmt.Errorf("host name: %w", err)
		}
	}
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

	rt, err := podruntime.Connect(ctx, podruntime.Config{
		Address:         cfg.ContainerdAddress,
		Namespace:       cfg.ContainerdNamespace,
		RootDir:         cfg.RootDir,
		LogsDir:         cfg.PodLogsDir,
		ImageDir:        cfg.ImageDir,
		AllowPrivileged: cfg.AllowPrivileged,
		LoggerPath:      self,
		LogMaxSize:      cfg.ContainerLogMaxSize,
		LogMaxFiles:     cfg.ContainerLogMaxFiles,
		ResolvConf:      cfg.ResolvConf,
		Log:             log.With("component", "podruntime"),

		SeccompProfileRoot:       cfg.SeccompProfileRoot,
		DefaultSeccompUnconfined: cfg.DefaultSeccomp == "unconfined",
		ShimGrouping:             cfg.ShimGrouping,
	})
	if err != nil {
		return err
	}
	defer rt.Close()
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
	lifecycle := pleg.New(pleg.Config{Lister: rt, Period: cfg.PLEGRelistPeriod, Log: log.With("component", "pleg")})
	// The first relist fills the cache before anything reads it, so that
	// housekeeping and status see the containers a previous tug left.
	if err := lifecycle.Relist(ctx); err != nil {
		log.Warn("first relist", "err", err)
	}
	// A pod defined by both runs from the file: the device owner's word.
	store.SetSourceOrder(sources...)
	loop := reconcile.New(reconcile.Config{
		Runtime:      rt,
		Sandbox:      sandbox,
		Network:      podNet,
		Cgroups:      cgroups,
		Cache:        lifecycle,
		Desired:      store,
		Sources:      sources,
		Admission:    newPolicy(cfg, levels),
		Updates:      store.Updates(),
		Events:       lifecycle.Events(),
		ResyncPeriod: cfg.SyncFrequency,
		MaxPods:      cfg.MaxPods,
		Backoff: &reconcile.CrashBackoff{
			Initial: cfg.CrashLoopBackOffInitial,
			Max:     cfg.CrashLoopBackOffMax,
			Reset:   cfg.CrashLoopBackOffReset,
		},
		Log: log.With("component", "reconcile"),
	})
	view := reconcile.View{Store: store, Loop: loop}
	components := map[string]func(context.Context) error{
		"sync loop":   loop.Run,
		"file source": dir.Run,
		"image dir":   rt.WatchImages,
		"pleg":        lifecycle.Run,
		"containerd events": func(ctx context.Context) error {
			return rt.WatchEvents(ctx, lifecycle.Wake)
		},
	}
	if web != nil {
		view.Fetch = map[string]func() pod.FetchStatus{web.Name(): web.Status}
		components["http source"] = web.Run
	}
	server := &api.Server{Status: view, Health: health{pleg: lifecycle, runtime: rt}, Log: log.With("component", "api")}
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

// newHTTPSource builds the --manifest-url source. Its checkpoint lives
// under <root-dir>/checkpoints, named by a hash of the redacted URL (so a
// rotated token keeps it).
func newHTTPSource(cfg config.Config, hostname string, sink source.Sink, log *slog.Logger) (*source.HTTP, error) {
	header := http.Header{}
	if cfg.ManifestURLHeaderFile != "" {
		h, err := source.ReadHeaderFile(cfg.ManifestURLHeaderFile)
		if err != nil {
			return nil, err
		}
		header = h
		if fi, err := os.Stat(cfg.ManifestURLHeaderFile); err == nil && fi.Mode().Perm()&0o077 != 0 {
			log.Warn("the manifest URL header file is readable by other users; make it 0600", "file", cfg.ManifestURLHeaderFile, "mode", fi.Mode().Perm())
		}
	}
	for _, h := range cfg.ManifestURLHeader {
		name, value, _ := strings.Cut(h, ":") // validated by config
		header.Add(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	keys, err := source.LoadPublicKeys(cfg.ManifestVerifyKey)
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

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level)) // validated by config
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}
