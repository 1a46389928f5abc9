package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	containerd "github.com/containerd/containerd/v2/client"

	"tug/bench/internal/kit"
)

// env is what every measurement needs: the containerd client, the event
// recorder, the running tugs, podman when it is measured, and the work
// directory.
type env struct {
	o          options
	client     *containerd.Client
	rec        *kit.Recorder
	stopEvents context.CancelFunc
	dir        string
	tugs       []*tugUnderTest
	podman     *podman
	containerd int    // containerd's pid, from the test environment's pid file; 0 if unknown
	clkTck     uint64 // clock ticks per second
}

// tugUnderTest is one running tug: the tug under test, or the base (-base)
// measured beside it in the same run.
type tugUnderTest struct {
	label string // "tug" or "base": the prefix of its methods' names
	ns    string // its containerd namespace
	t     *kit.Tug
}

// setup connects to containerd, prepares the namespaces (image imported,
// leftovers of an earlier run removed), subscribes to the events and starts
// the tugs (and podman's network namespace). On failure it undoes what it
// did.
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
	e = &env{o: o, client: client, dir: dir, stopEvents: func() {}, clkTck: kit.ClockTicks()}
	e.containerd = containerdPID(o.Containerd)
	defer func() {
		if err != nil {
			err = errors.Join(err, e.teardown())
		}
	}()
	for _, ns := range e.namespaces() {
		if err := kit.Purge(ctx, client, ns, nil); err != nil {
			return e, fmt.Errorf("remove leftovers in namespace %s: %w", ns, err)
		}
		if err := kit.ImportImage(ctx, client, ns, o.Archive, o.Image); err != nil {
			return e, err
		}
	}
	if err := writeEtcFiles(filepath.Join(dir, "ctr-etc")); err != nil {
		return e, err
	}
	evctx, cancel := context.WithCancel(context.Background())
	e.stopEvents = cancel
	e.rec = kit.Subscribe(evctx, client, e.namespaces()...)

	for _, u := range e.tugsWanted() {
		if err := e.startTug(ctx, u.label, u.ns, u.bin); err != nil {
			return e, err
		}
	}
	if o.podman != "" {
		if e.podman, err = newPodman(ctx, o.podman, dir, o.Archive); err != nil {
			return e, err
		}
	}
	return e, nil
}

// writeEtcFiles writes the files a pod-spec ctr run binds (ctrSpec.pod),
// with contents like tug's, into dir.
func writeEtcFiles(dir string) error {
	files := map[string]string{
		"hostname":    hostname + "\n",
		"hosts":       "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n",
		"resolv.conf": "nameserver 127.0.0.53\n",
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("ctr's etc files: %w", err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			return fmt.Errorf("ctr's etc files: %w", err)
		}
	}
	return nil
}

// containerdPID reads the pid of the containerd serving socket from the
// test environment's pid file beside it (scripts/testenv.sh), 0 when there
// is none.
func containerdPID(socket string) int {
	b, err := os.ReadFile(filepath.Join(filepath.Dir(socket), "containerd.pid"))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	return pid
}

// containerdTicks returns containerd's CPU time in clock ticks, 0 when
// unknown.
func (e *env) containerdTicks() uint64 {
	if e.containerd == 0 {
		return 0
	}
	t, _ := kit.ReadTicks(e.containerd)
	return t
}

// containerdSince returns containerd's CPU time since from (ticks), -1
// when unknown.
func (e *env) containerdSince(from uint64) time.Duration {
	if e.containerd == 0 || from == 0 {
		return -1
	}
	return e.ticks(e.containerdTicks() - from)
}

// ticks converts clock ticks to a duration.
func (e *env) ticks(t uint64) time.Duration {
	return time.Duration(t) * time.Second / time.Duration(e.clkTck)
}

// tugsWanted lists the tugs to run: the one under test and, with -base,
// the base.
func (e *env) tugsWanted() []struct{ label, ns, bin string } {
	ts := []struct{ label, ns, bin string }{{labelTug, nsTug, e.o.Tug}}
	if e.o.base != "" {
		ts = append(ts, struct{ label, ns, bin string }{labelBase, nsBase, e.o.base})
	}
	return ts
}

// namespaces are the containerd namespaces the benchmark uses.
func (e *env) namespaces() []string {
	nss := []string{nsCtr}
	for _, u := range e.tugsWanted() {
		nss = append(nss, u.ns)
	}
	return nss
}

// startTug starts one tug in namespace ns, with its directories below
// <work dir>/<label>, and waits until its file source runs.
func (e *env) startTug(ctx context.Context, label, ns, bin string) error {
	dir := filepath.Join(e.dir, label)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("%s work directory: %w", label, err)
	}
	t, err := kit.NewTug(ctx, kit.TugConfig{
		Bin: bin, Dir: dir, Containerd: e.o.Containerd, Namespace: ns, Hostname: hostname,
		LogLevel: "debug", Netns: label, Args: strings.Fields(e.o.tugArgs),
	})
	if err != nil {
		return err
	}
	if err := t.Start(); err != nil {
		return err
	}
	e.tugs = append(e.tugs, &tugUnderTest{label: label, ns: ns, t: t})
	fmt.Fprintf(os.Stderr, "benchstart: %s started (%s, pid %d, log %s)\n", label, t.Bin, t.PID(), t.LogPath)
	// tug's file source logs with source=file:... once it runs; the warm-up
	// run is the real check that tug works.
	return t.WaitLogged(ctx, "source=file:", time.Second)
}

// teardown stops the tugs and removes everything the benchmark made:
// containers, images and namespaces in containerd, podman's pods, the
// tugs' namespace pins and the work directory. It uses its own context:
// it also runs after an interrupt.
func (e *env) teardown() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var errs []error
	for _, u := range e.tugs {
		errs = append(errs, u.t.Stop(15*time.Second))
	}
	if e.podman != nil {
		errs = append(errs, e.podman.close(ctx))
	}
	e.stopEvents()
	for _, ns := range e.namespaces() {
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
