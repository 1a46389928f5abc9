package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	containerd "github.com/containerd/containerd/v2/client"

	"tug/bench/internal/kit"
)

// env is what every measurement needs: the containerd client, the event
// recorder, the running tug and the work directory.
type env struct {
	o          options
	client     *containerd.Client
	rec        *kit.Recorder
	stopEvents context.CancelFunc
	dir        string
	tug        *kit.Tug
}

// setup connects to containerd, prepares both namespaces (image imported,
// leftovers of an earlier run removed), subscribes to the events and starts
// tug. On failure it undoes what it did.
func setup(ctx context.Context, o options) (e *env, err error) {
	client, err := kit.Connect(o.Containerd)
	if err != nil {
		return nil, err
	}
	dir, err := kit.WorkDir("benchstart")
	if err != nil {
		client.Close()
		return nil, err
	}
	e = &env{o: o, client: client, dir: dir, stopEvents: func() {}}
	defer func() {
		if err != nil {
			err = errors.Join(err, e.teardown())
		}
	}()
	for _, ns := range []string{nsTug, nsCtr} {
		if err := kit.Purge(ctx, client, ns, nil); err != nil {
			return e, fmt.Errorf("remove leftovers in namespace %s: %w", ns, err)
		}
		if err := kit.ImportImage(ctx, client, ns, o.Archive, o.Image); err != nil {
			return e, err
		}
	}
	evctx, cancel := context.WithCancel(context.Background())
	e.stopEvents = cancel
	e.rec = kit.Subscribe(evctx, client, nsTug, nsCtr)

	t, err := kit.NewTug(ctx, kit.TugConfig{
		Bin: o.Tug, Dir: dir, Containerd: o.Containerd, Namespace: nsTug, Hostname: hostname,
		LogLevel: "debug", Netns: "tug", Args: strings.Fields(o.tugArgs),
	})
	if err != nil {
		return e, err
	}
	if err := t.Start(); err != nil {
		return e, err
	}
	e.tug = t
	fmt.Fprintf(os.Stderr, "benchstart: tug started (pid %d, log %s)\n", t.PID(), t.LogPath)
	// tug's file source logs with source=file:... once it runs; the warm-up
	// run is the real check that tug works.
	return e, t.WaitLogged(ctx, "source=file:", time.Second)
}

// teardown stops tug and removes everything the benchmark made: containers,
// images and namespaces in containerd, tug's namespace pins and the work
// directory. It uses its own context: it also runs after an interrupt.
func (e *env) teardown() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var errs []error
	if e.tug != nil {
		errs = append(errs, e.tug.Stop(15*time.Second))
	}
	e.stopEvents()
	for _, ns := range []string{nsTug, nsCtr} {
		if err := kit.Purge(ctx, e.client, ns, nil); err != nil {
			errs = append(errs, fmt.Errorf("remove containers in namespace %s: %w", ns, err))
			continue
		}
		errs = append(errs, kit.RemoveNamespace(ctx, e.client, ns))
	}
	errs = append(errs, e.client.Close())
	errs = append(errs, kit.RemoveWorkDir("benchstart", e.dir, e.o.Keep))
	return errors.Join(errs...)
}
