// Command benchwear measures what tug itself writes to storage at rest
// ("make bench"): the flash wear of a device that runs a few quiet pods
// for months. Four tugs with N one-container pods (busybox sleep) each run
// side by side against the same containerd, on default settings: tug built
// from this tree and a baseline tug built from -base-rev (or -base), each
// once plain and once reporting (signed status documents to --status-url
// and metrics by remote write, to in-process receivers that answer 204 at
// once). Over one window it reads each tug's /proc/PID/io (write_bytes:
// the bytes its writes dirtied, which reach storage; cancelled_write_bytes
// beside it) and traces its file system calls with strace (-f -y: writes,
// fsyncs, file creations, renames, removals, by path), extrapolated to a
// day. The shims of each tug and the containerd daemon are read too, apart:
// they are not tug's writes (containerd's figure is the whole daemon's,
// shared with anything else the test environment runs).
//
//	go run ./bench/benchwear [-pods 10] [-settle 60s] [-window 180s] [-tug ./tug] [-base ./tug-base | -base-rev REV] [-keep] [-markdown]
//
// It needs root, strace and a containerd (scripts/testenv.sh up). It
// prints PASS/FAIL against its target (at most 1 MiB a day from the
// reporting tug of this tree) and exits 0 whether it is met or not: it is
// a measurement. docs/benchmarks.md holds measured numbers.
package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"tug/bench/internal/kit"
)

// targetPerDay: what the reporting tug may write at rest in a day.
const targetPerDay = 1 << 20

type options struct {
	kit.Options
	pods    int
	settle  time.Duration
	window  time.Duration
	base    string
	baseRev string
}

func main() {
	var o options
	o.Flags(flag.CommandLine)
	flag.CommandLine.IntVar(&o.pods, "pods", 10, "number of running one-container pods of each tug")
	flag.CommandLine.DurationVar(&o.settle, "settle", 60*time.Second, "wait after all pods run, before measuring")
	flag.CommandLine.DurationVar(&o.window, "window", 180*time.Second, "window measured (several pushes and status heartbeats)")
	flag.CommandLine.StringVar(&o.base, "base", "", "baseline tug binary (default: build -base-rev)")
	flag.CommandLine.StringVar(&o.baseRev, "base-rev", "e768e50", "commit the baseline tug is built from when -base is empty (the last one that writes every remote-write batch to disk before sending it)")
	flag.Parse()

	err := o.check()
	kit.Run("benchwear", err, func(ctx context.Context) error { return run(ctx, o) })
}

func (o *options) check() error {
	errs := []error{o.Options.Check()}
	if o.pods < 1 || o.pods > 100 {
		errs = append(errs, errors.New("-pods: from 1 to 100"))
	}
	if o.window < 2*time.Minute {
		errs = append(errs, errors.New("-window: at least 2m (four pushes, two heartbeats)"))
	}
	if o.base == "" && o.baseRev == "" {
		errs = append(errs, errors.New("-base or -base-rev: the baseline is needed"))
	}
	if _, err := exec.LookPath("strace"); err != nil {
		errs = append(errs, fmt.Errorf("strace: %w (apt-get install strace)", err))
	}
	return errors.Join(errs...)
}

// receiver answers every request 204 at once and counts them.
type receiver struct{ requests atomic.Int64 }

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	rc.requests.Add(1)
	w.WriteHeader(http.StatusNoContent)
}

// subject is one of the four tugs.
type subject struct {
	name      string // "baseline, plain"...
	build     string // "baseline" or "this tree"
	reporting bool
	session   *kit.Session
	tug       *kit.Tug
	rcv       receiver
	port      int
	stopServe func()

	io0, io1       kit.IO // tug, at the window's ends
	shim0, shim1   kit.IO // its shims
	trace          *tracer
	shims          []int
	traced         summary
	requests0, req int64
}

func run(ctx context.Context, o options) (err error) {
	client, err := kit.Connect(o.Containerd)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, client.Close()) }()

	subjects := []*subject{
		{name: "baseline, plain", build: "baseline"},
		{name: "baseline, reporting", build: "baseline", reporting: true},
		{name: "this tree, plain", build: "this tree"},
		{name: "this tree, reporting", build: "this tree", reporting: true},
	}
	for i, s := range subjects {
		if s.session, err = kit.OpenClient(ctx, "benchwear", client, o.Options, fmt.Sprintf("bench-wear-%d", i)); err != nil {
			return err
		}
		defer func() { err = errors.Join(err, s.session.Close()) }()
	}

	// The binaries: this tree's (-tug or built), the baseline's (-base or
	// built from -base-rev).
	treeBin := o.Tug
	if treeBin == "" {
		if treeBin, err = kit.BuildTug(ctx, subjects[0].session.Dir); err != nil {
			return err
		}
	}
	baseBin := o.base
	if baseBin == "" {
		fmt.Fprintf(os.Stderr, "benchwear: building the baseline tug from %s\n", o.baseRev)
		if baseBin, err = kit.BuildRev(ctx, o.baseRev, subjects[0].session.Dir); err != nil {
			return err
		}
	}

	for i, s := range subjects {
		bin := treeBin
		if s.build == "baseline" {
			bin = baseBin
		}
		cfg := kit.TugConfig{Bin: bin, Hostname: fmt.Sprintf("wear%d", i), Healthz: true, Netns: fmt.Sprintf("wear%d", i)}
		if s.reporting {
			// The reporting tug's network namespace is new: a port free on
			// the host's loopback is free there too.
			if s.port, err = kit.FreePort(); err != nil {
				return err
			}
			key := filepath.Join(s.session.Dir, "status.key")
			if err := writeSigningKey(key); err != nil {
				return err
			}
			cfg.Args = []string{
				"--metrics-remote-write-url", fmt.Sprintf("http://127.0.0.1:%d/api/v1/write", s.port),
				"--status-url", fmt.Sprintf("http://127.0.0.1:%d/status", s.port),
				"--status-signing-key", key,
			}
		}
		if s.tug, err = s.session.NewTug(ctx, cfg); err != nil {
			return err
		}
		if err := s.tug.WriteSleepPods("wear", o.pods, o.Image, ""); err != nil {
			return err
		}
		if err := s.tug.AddImage(o.Archive); err != nil {
			return err
		}
		if err := s.tug.Start(); err != nil {
			return err
		}
		if s.reporting {
			netns, err := s.tug.NetnsName()
			if err != nil {
				return err
			}
			l, err := kit.ListenIn(netns, s.port)
			if err != nil {
				return err
			}
			srv := &http.Server{Handler: &s.rcv}
			go func() { _ = srv.Serve(l) }()
			s.stopServe = func() { srv.Close() }
			defer s.stopServe()
		}
	}
	fmt.Fprintf(os.Stderr, "benchwear: four tugs started; waiting for %d pods each\n", o.pods)
	for _, s := range subjects {
		if err := s.tug.WaitPods(ctx, o.pods, 5*time.Minute, kit.AllRunning(1)); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	fmt.Fprintf(os.Stderr, "benchwear: all pods running; settling %v\n", o.settle)
	if err := kit.Sleep(ctx, o.settle); err != nil {
		return err
	}
	for _, s := range subjects {
		if s.reporting && s.rcv.requests.Load() == 0 {
			return fmt.Errorf("%s sent nothing during start-up and settling: check its log %s", s.name, s.tug.LogPath)
		}
		if s.shims, _, err = s.tug.Helpers(o.Containerd, s.session.Namespace); err != nil {
			return err
		}
		if s.trace, err = startTrace(s.tug.PID(), filepath.Join(s.session.Dir, "strace.out")); err != nil {
			return err
		}
		defer s.trace.stop()
	}
	// strace attaches to every thread before the window opens.
	if err := kit.Sleep(ctx, 2*time.Second); err != nil {
		return err
	}
	cdPID, cdErr := kit.TestenvContainerdPID()
	var cd0, cd1 kit.IO
	if cdErr == nil {
		cd0, cdErr = kit.ReadIO(cdPID)
	}
	for _, s := range subjects {
		if s.io0, err = kit.ReadIO(s.tug.PID()); err != nil {
			return err
		}
		if s.shim0, err = kit.SumIO(s.shims); err != nil {
			return err
		}
		s.requests0 = s.rcv.requests.Load()
	}
	start := time.Now()
	fmt.Fprintf(os.Stderr, "benchwear: measuring %v\n", o.window)
	if err := kit.Sleep(ctx, o.window); err != nil {
		return err
	}
	for _, s := range subjects {
		if s.io1, err = kit.ReadIO(s.tug.PID()); err != nil {
			return fmt.Errorf("%s: %w", s.name, errors.Join(err, s.tug.Alive()))
		}
		if s.shim1, err = kit.SumIO(s.shims); err != nil {
			return err
		}
		s.req = s.rcv.requests.Load() - s.requests0
	}
	if cdErr == nil {
		cd1, cdErr = kit.ReadIO(cdPID)
	}
	window := time.Since(start)
	for _, s := range subjects {
		if err := s.trace.stop(); err != nil {
			return fmt.Errorf("%s: strace: %w", s.name, err)
		}
		if s.traced, err = parseTraceFile(s.trace.out, s.tug.Dir); err != nil {
			return err
		}
	}
	printReport(os.Stdout, o, window, subjects, cd1.Sub(cd0), cdErr)
	return nil
}

// writeSigningKey writes a new ed25519 key, PKCS#8 PEM, to path: the
// reporting tug's --status-signing-key.
func writeSigningKey(path string) error {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600)
}

// tracer is strace attached to every thread of one tug.
type tracer struct {
	cmd     *exec.Cmd
	out     string
	stopped bool
	err     error
}

// traced are the file system calls strace records: what writes data, what
// makes it durable, what creates, renames or removes a name.
const traced = "trace=openat,open,creat,write,pwrite64,writev,pwritev,pwritev2,fsync,fdatasync,sync_file_range,syncfs,sync," +
	"rename,renameat,renameat2,unlink,unlinkat,ftruncate,truncate,mkdir,mkdirat"

func startTrace(pid int, out string) (*tracer, error) {
	cmd := exec.Command("strace", "-f", "-qq", "-y", "-s", "0", "-e", traced, "-e", "signal=none",
		"-o", out, "-p", fmt.Sprint(pid))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("strace: %w", err)
	}
	return &tracer{cmd: cmd, out: out}, nil
}

// stop detaches strace (SIGINT) and waits for it.
func (t *tracer) stop() error {
	if t.stopped {
		return t.err
	}
	t.stopped = true
	_ = t.cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- t.cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = nil // strace exits non-zero when interrupted
		}
		t.err = err
	case <-time.After(10 * time.Second):
		_ = t.cmd.Process.Kill()
		t.err = errors.Join(errors.New("did not detach within 10s; killed"), <-done)
	}
	return t.err
}
