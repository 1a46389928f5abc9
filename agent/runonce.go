package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"tug/internal/cli"
	"tug/internal/config"
	"tug/internal/pod"
	"tug/internal/podconfig"
	"tug/internal/podstatus"
)

// errRunOnceFailed ends it when a pod failed, a manifest is broken, or the
// wait timed out.
var errRunOnceFailed = errors.New("runonce: a pod failed")

// runOnceSteady is how long a container must have run for --runonce to
// count it as running: a container that fails at once (a missing file, a
// bad argument) is seen Running for a few milliseconds before it exits, and
// the report would call it running.
const runOnceSteady = time.Second

// runOnce waits until the file source has reported and every pod it gave is
// running (every app container running for runOnceSteady), has succeeded, or has failed
// (phase Failed, or a container stuck: crash-looping or unable to start),
// then prints the pods and returns nil, or errRunOnceFailed if any failed,
// any manifest is broken, or RunOnceTimeout passed. The pods
// keep running after tug exits, as with the kubelet's --runonce.
func runOnce(ctx context.Context, cfg config.Config, store *podconfig.Store, source string, view podstatus.Served, out io.Writer) error {
	deadline := time.Now().Add(cfg.RunOnceTimeout)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		if !store.Ready(source) {
			continue
		}
		pods := view.Pods()
		settled, failed := true, false
		for i := range pods {
			s, f := settledPod(&pods[i].Status, time.Now())
			settled, failed = settled && s, failed || f
		}
		timedOut := time.Now().After(deadline)
		if !settled && !timedOut {
			continue
		}
		manifests := view.Manifests()
		cli.PrintPods(out, pods, manifests, time.Now())
		for _, m := range manifests {
			failed = failed || m.Error != ""
		}
		switch {
		case timedOut && !settled:
			return fmt.Errorf("%w: not every pod settled within %s", errRunOnceFailed, cfg.RunOnceTimeout)
		case failed:
			return errRunOnceFailed
		}
		return nil
	}
}

// settledPod reports whether a pod has reached a state --runonce reports
// (running, succeeded or failed) at now, and whether that is a failure.
func settledPod(st *pod.Status, now time.Time) (settled, failed bool) {
	switch st.Phase {
	case pod.PhaseSucceeded:
		return true, false
	case pod.PhaseFailed:
		return true, true
	}
	if st.Reason == pod.ReasonBlocked {
		return true, true
	}
	running := len(st.ContainerStatuses) > 0
	for _, cs := range append(append([]pod.ContainerStatus(nil), st.InitContainerStatuses...), st.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil {
			switch w.Reason {
			case pod.ReasonCrashLoopBackOff, pod.ReasonErrImagePull, pod.ReasonImagePullBackOff, pod.ReasonImagePullDeferred,
				pod.ReasonErrImageNeverPull, pod.ReasonCreateContainerError, pod.ReasonCreateContainerConfigError:
				return true, true
			}
		}
	}
	for _, cs := range st.ContainerStatuses {
		r := cs.State.Running
		running = running && r != nil && (r.StartedAt.IsZero() || now.Sub(r.StartedAt) >= runOnceSteady)
	}
	return running, false
}
