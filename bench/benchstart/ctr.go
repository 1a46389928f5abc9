package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os/exec"
	"path/filepath"
	"time"

	"tug/bench/internal/kit"
)

// ctrRun is one `ctr run -d` of a sleeping container, its output kept for
// the error message.
type ctrRun struct {
	cmd *exec.Cmd
	out bytes.Buffer
}

// ctrSpec says what a ctr run adds to ctr's defaults.
type ctrSpec struct {
	logger bool // tug's log driver instead of ctr's FIFOs
	// pod: what tug's spec adds to ctr's for every container, whatever
	// runs it: the default seccomp profile and read-only bind mounts of
	// /etc/hostname, /etc/hosts and /etc/resolv.conf.
	pod bool
}

// etcFiles are the files a pod-spec ctr run binds, by destination.
var etcFiles = []string{"/etc/hostname", "/etc/hosts", "/etc/resolv.conf"}

func newCtrRun(ctx context.Context, e *env, id string, spec ctrSpec) *ctrRun {
	args := []string{"-a", e.o.Containerd, "-n", nsCtr, "run", "-d"}
	if spec.logger {
		args = append(args, "--log-uri", tugLogURI(e, id))
	}
	if spec.pod {
		args = append(args, "--seccomp")
		for _, dst := range etcFiles {
			src := filepath.Join(e.dir, "ctr-etc", filepath.Base(dst))
			args = append(args, "--mount", "type=bind,src="+src+",dst="+dst+",options=rbind:ro")
		}
	}
	args = append(args, e.o.Image, id, "sleep", "3600")
	r := &ctrRun{cmd: exec.CommandContext(ctx, "ctr", args...)}
	r.cmd.Stdout, r.cmd.Stderr = &r.out, &r.out
	return r
}

// tugLogURI is the log driver tug gives its containers ("<tug> logger
// <settings>", run by the shim), writing to the work directory.
func tugLogURI(e *env, id string) string {
	settings := url.Values{"path": {filepath.Join(e.dir, "ctr-logs", id+".log")}}.Encode()
	u := url.URL{Scheme: "binary", Path: e.tugs[0].t.Bin, RawQuery: url.Values{"logger": {settings}}.Encode()}
	return u.String()
}

func (r *ctrRun) wait() error {
	if err := r.cmd.Wait(); err != nil {
		return fmt.Errorf("%s: %w: %s", r.cmd, err, bytes.TrimSpace(r.out.Bytes()))
	}
	return nil
}

// runCtrParallel is the all-at-once floor: n ctr processes started
// together; t0 is just before the first starts.
func runCtrParallel(ctx context.Context, e *env, n, run int) (sample, error) {
	return measureCtr(ctx, e, n, run, ctrSpec{}, startAll)
}

// runCtrPodSpec is runCtrParallel with what tug's spec adds for every
// container (ctrSpec.pod): the floor of a pod's container on the node's
// network.
func runCtrPodSpec(ctx context.Context, e *env, n, run int) (sample, error) {
	return measureCtr(ctx, e, n, run, ctrSpec{pod: true}, startAll)
}

// runCtrLogger is runCtrParallel with tug's log driver instead of ctr's
// FIFOs (-logger-diag): what tug's logger costs on its own.
func runCtrLogger(ctx context.Context, e *env, n, run int) (sample, error) {
	return measureCtr(ctx, e, n, run, ctrSpec{logger: true}, startAll)
}

// startAll starts every ctr process, then waits for them all.
func startAll(runs []*ctrRun) error {
	var errs []error
	for _, r := range runs {
		if err := r.cmd.Start(); err != nil {
			errs = append(errs, fmt.Errorf("start ctr: %w", err))
		}
	}
	for _, r := range runs {
		if r.cmd.Process != nil {
			errs = append(errs, r.wait())
		}
	}
	return errors.Join(errs...)
}

// runCtrSerial is the one-after-another floor: each ctr process is started
// when the one before has returned.
func runCtrSerial(ctx context.Context, e *env, n, run int) (sample, error) {
	return measureCtr(ctx, e, n, run, ctrSpec{}, func(runs []*ctrRun) error {
		for _, r := range runs {
			if err := r.cmd.Start(); err != nil {
				return fmt.Errorf("start ctr: %w", err)
			}
			if err := r.wait(); err != nil {
				return err
			}
		}
		return nil
	})
}

// measureCtr times launch (which runs the ctr processes) from t0 to the
// n-th task start, and to the return of the last ctr process; then it
// checks and removes the containers (untimed).
func measureCtr(ctx context.Context, e *env, n, run int, spec ctrSpec, launch func([]*ctrRun) error) (sample, error) {
	ids := map[string]bool{}
	mctx, cancel := context.WithTimeout(ctx, runTimeout(n))
	defer cancel()
	runs := make([]*ctrRun, n)
	for i, id := range podNames("c", n, run) {
		ids[id] = true
		runs[i] = newCtrRun(mctx, e, id, spec)
	}
	key := func(id string) (string, bool) { return id, ids[id] }
	mine := func(id string) bool { return ids[id] }

	e.rec.Drain()
	ctrd0 := e.containerdTicks()
	t0 := time.Now()
	err := launch(runs)
	wall := time.Since(t0)
	if err != nil {
		return sample{}, errors.Join(err, kit.Purge(ctx, e.client, nsCtr, mine))
	}
	tl, err := e.rec.Await(mctx, nsCtr, n, key)
	if err != nil {
		return sample{}, errors.Join(err, kit.Purge(ctx, e.client, nsCtr, mine))
	}
	s := newSample(tl, t0)
	s.ctrdCPU = e.containerdSince(ctrd0)
	s.wall = wall
	if err := kit.CheckRunning(mctx, e.client, nsCtr, n, mine); err != nil {
		return s, err
	}
	return s, kit.Purge(ctx, e.client, nsCtr, mine)
}
