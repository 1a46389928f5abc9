package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"

	"tug/internal/config"
	"tug/internal/network"
	"tug/internal/podconfig"
	"tug/internal/podruntime"
	"tug/internal/reconcile"
	"tug/internal/source"
)

// Compile-time checks that the concrete types fill the roles reconcile and
// source declare.
var (
	_ reconcile.Runtime = (*podruntime.Runtime)(nil)
	_ reconcile.Sandbox = (*network.Namespaces)(nil)
	_ source.Sink       = (*podconfig.Store)(nil)
)

// runAgent is "tug run": it builds the components and runs them until ctx
// ends. Stopping tug leaves the pods running.
func runAgent(ctx context.Context, args []string, stderr io.Writer) error {
	cfg, err := config.Parse("tug run", args)
	if err != nil {
		return err
	}
	log := newLogger(stderr, cfg.LogLevel)
	log.Info("starting tug", "version", version, "config", fmt.Sprintf("%+v", cfg))

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

	rt, err := podruntime.New(ctx, podruntime.Config{
		Address:         cfg.ContainerdAddress,
		Namespace:       cfg.ContainerdNamespace,
		RootDir:         cfg.RootDir,
		LogsDir:         cfg.PodLogsDir,
		ImageDir:        cfg.ImageDir,
		AllowPrivileged: cfg.AllowPrivileged,
		LoggerPath:      self,
		LogMaxSize:      cfg.ContainerLogMaxSize,
		LogMaxFiles:     cfg.ContainerLogMaxFiles,
		Log:             log.With("component", "podruntime"),
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

	sandbox := network.NewNamespaces(cfg.RunDir, log.With("component", "network"))
	if err := sandbox.Init(); err != nil {
		return err
	}
	store := podconfig.New()
	dir := source.NewDir(source.DirConfig{
		Path:     cfg.PodManifestPath,
		Hostname: hostname,
		Rescan:   cfg.FileCheckFrequency,
		Log:      log,
	}, store)
	loop := reconcile.New(reconcile.Config{
		Runtime:      rt,
		Sandbox:      sandbox,
		Updates:      store.Updates(),
		ResyncPeriod: cfg.SyncFrequency,
		Log:          log.With("component", "reconcile"),
	})
	return runAll(ctx, log, map[string]func(context.Context) error{
		"sync loop":   loop.Run,
		"file source": dir.Run,
		"image dir":   rt.WatchImages,
	})
}

// runAll runs each component until ctx ends or one of them fails; then it
// stops the others and returns the first failure.
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
