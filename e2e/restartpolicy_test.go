//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	apievents "github.com/containerd/containerd/api/events"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/typeurl/v2"

	"tug/internal/pod"
	"tug/internal/podlabels"
	"tug/internal/podview"
)

// TestCrashLoopBackoff runs a container that always exits 1 under
// restartPolicy Always, with tug's default back-off: it is restarted at
// once, then after 10, 20 and 40 s, and "tug pods" shows CrashLoopBackOff
// and the restart count while it waits. About 75 s.
func TestCrashLoopBackoff(t *testing.T) {
	t.Parallel()
	testCrashLoop(t, nil, []time.Duration{0, 10 * time.Second, 20 * time.Second, 40 * time.Second}, 3*time.Second)
}

// TestCrashLoopBackoffFlags is the same with --crash-loop-back-off-initial
// 1s and --crash-loop-back-off-max 4s: restarts after 0, 1, 2, 4 and again
// 4 s (the cap).
func TestCrashLoopBackoffFlags(t *testing.T) {
	testCrashLoop(t, []string{"--crash-loop-back-off-initial", "1s", "--crash-loop-back-off-max", "4s"},
		[]time.Duration{0, time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second}, 700*time.Millisecond)
}

// testCrashLoop starts tug with args and a pod whose container exits 1 at
// once, records when each of its tasks starts (containerd's /tasks/start
// events), and checks the gaps between the starts against want, within
// tolerance. In every back-off window it checks what tug reports: "tug
// pods" STATUS CrashLoopBackOff with the restart count, and the
// container's waiting state, message and last state in the API.
func testCrashLoop(t *testing.T, args []string, want []time.Duration, tolerance time.Duration) {
	tg := startTug(t, tugOpts{args: args})
	starts := tg.recordTaskStarts()
	tg.writeManifest("crash.yaml", shPod("crash", tg.image, "echo crashing; exit 1"))

	var at []time.Time
	for attempt := 0; attempt <= len(want); attempt++ {
		timeout := startTimeout
		if attempt > 0 {
			timeout = want[attempt-1] + tolerance + 5*time.Second
		}
		s := starts.wait(t, attempt, timeout)
		at = append(at, s.at)
		if attempt > 0 {
			gap := s.at.Sub(at[attempt-1])
			t.Logf("attempt %d started %v after attempt %d (want %v ± %v)", attempt, gap.Round(time.Millisecond), attempt-1, want[attempt-1], tolerance)
		}
		if attempt == 0 || attempt == len(want) {
			continue // no back-off follows the first exit; the last is not waited for
		}
		// The attempt exits at once; tug notes its back-off, want[attempt],
		// and waits. The message names that back-off, so that a note left
		// from the previous attempt's wait does not count.
		backoff := want[attempt]
		msg := fmt.Sprintf("back-off %v restarting failed container=main pod=default/%s", backoff, staticName("crash"))
		notStarted := func() error {
			if starts.count() > attempt+1 {
				return fmt.Errorf("%w: attempt %d started first", errStop, attempt+1)
			}
			return nil
		}
		tg.waitPod(backoff+tolerance, "crash", fmt.Sprintf("waiting in CrashLoopBackOff after %d restarts", attempt), func(v *podview.View) error {
			if err := notStarted(); err != nil {
				return err
			}
			cs := v.Status.ContainerStatuses[0]
			w, last := cs.State.Waiting, cs.LastTerminationState.Terminated
			if v.Status.Phase != pod.PhaseRunning || cs.RestartCount != int32(attempt) || w == nil ||
				w.Reason != pod.ReasonCrashLoopBackOff || w.Message != msg ||
				last == nil || last.ExitCode != 1 || last.Reason != pod.ReasonError {
				return fmt.Errorf("waiting %+v, last state %+v; want waiting CrashLoopBackOff %q, restartCount %d, last state exit 1 Error",
					w, last, msg, attempt)
			}
			return nil
		})
		tg.waitFor(backoff+tolerance, fmt.Sprintf("tug pods to show CrashLoopBackOff with %d restarts", attempt), func() (bool, error) {
			if err := notStarted(); err != nil {
				return false, err
			}
			rows, _, err := tg.podTable()
			if err != nil {
				return false, err
			}
			r := rows[staticName("crash")]
			n, err := restartsOf(r["RESTARTS"])
			if r["STATUS"] != "CrashLoopBackOff" || err != nil || n != attempt || r["READY"] != "0/1" {
				return false, fmt.Errorf("row %v", r)
			}
			return true, nil
		})
	}

	var gaps []time.Duration
	for i := 1; i < len(at); i++ {
		gaps = append(gaps, at[i].Sub(at[i-1]))
	}
	t.Logf("restart gaps %v, want %v ± %v", roundAll(gaps), want, tolerance)
	for i, g := range gaps {
		if d := g - want[i]; d < -tolerance || d > tolerance {
			t.Errorf("restart %d came %v after the previous start, want %v ± %v", i+1, g.Round(time.Millisecond), want[i], tolerance)
		}
	}
}

// TestRestartPolicies runs one pod per case in one tug and checks each
// against the Kubernetes rules: the phase, whether the container was
// restarted, and for init containers that the app never started.
func TestRestartPolicies(t *testing.T) {
	t.Parallel()
	type check struct {
		phase       pod.Phase
		restarted   bool   // the failing container is restarted (else: never)
		status      string // "tug pods" STATUS, when set
		appNever    bool   // no app container is ever created
		initFailing bool   // the init container is the one that exits
	}
	cases := []struct {
		name, policy, init, app string
		want                    check
	}{
		{"onfailure-exit0", "OnFailure", "", "exit 0", check{phase: pod.PhaseSucceeded, status: "Completed"}},
		{"onfailure-exit1", "OnFailure", "", "exit 1", check{phase: pod.PhaseRunning, restarted: true, status: "CrashLoopBackOff"}},
		{"never-exit1", "Never", "", "exit 1", check{phase: pod.PhaseFailed, status: "Error"}},
		{"never-exit0", "Never", "", "exit 0", check{phase: pod.PhaseSucceeded, status: "Completed"}},
		{"init-never", "Never", "exit 1", idle, check{phase: pod.PhaseFailed, status: "Init:Error", appNever: true, initFailing: true}},
		{"init-always", "Always", "exit 1", idle, check{phase: pod.PhasePending, restarted: true, status: "Init:CrashLoopBackOff", appNever: true, initFailing: true}},
	}
	tg := startTug(t, tugOpts{})
	for _, c := range cases {
		tg.writeManifest(c.name+".yaml", policyPod(c.name, tg.image, c.policy, c.init, c.app))
	}

	// First every pod reaches its state, then, after long enough for a
	// restart that should not happen, each is checked again.
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tg := tg.forTest(t)
			w := c.want
			failing := "app"
			if w.initFailing {
				failing = "init"
			}
			if w.restarted {
				tg.waitFor(startTimeout, fmt.Sprintf("container %s of pod %s to be restarted", failing, c.name), func() (bool, error) {
					ct, ok, err := tg.container(tg.uid(c.name), failing)
					if err != nil || !ok {
						return false, err
					}
					return ct.Attempt() >= 1, fmt.Errorf("latest is %v", ct)
				})
			}
			tg.waitPod(startTimeout, c.name, "phase "+string(w.phase), func(v *podview.View) error {
				if err := phaseIs(w.phase)(v); err != nil {
					if terminal(v.Status.Phase) {
						err = fmt.Errorf("%w: %w", errStop, err) // it will not change
					}
					return err
				}
				cs := v.Status.ContainerStatuses[0]
				if w.initFailing {
					cs = v.Status.InitContainerStatuses[0]
				}
				switch {
				case w.restarted && cs.RestartCount < 1:
					return fmt.Errorf("restartCount %d", cs.RestartCount)
				case !w.restarted && (cs.State.Terminated == nil || cs.RestartCount != 0):
					return fmt.Errorf("container %s not terminated without restarts", cs.Name)
				}
				return nil
			})
			if w.status != "" {
				tg.waitFor(logTimeout, "tug pods to show "+w.status, func() (bool, error) {
					rows, _, err := tg.podTable()
					if err != nil {
						return false, err
					}
					r := rows[staticName(c.name)]
					return r["STATUS"] == w.status, fmt.Errorf("row %v", r)
				})
			}
		})
	}

	time.Sleep(3 * time.Second) // > a relist period and an immediate restart
	for _, c := range cases {
		t.Run(c.name+" later", func(t *testing.T) {
			w := c.want
			v, err := tg.podView(c.name)
			if err != nil {
				t.Fatal(err)
			}
			if v.Status.Phase != w.phase {
				t.Errorf("phase %s, want %s (%s)", v.Status.Phase, w.phase, describeStatus(&v.Status))
			}
			rows, _, err := tg.podTable()
			if err != nil {
				t.Fatal(err)
			}
			r := rows[staticName(c.name)]
			if n, err := restartsOf(r["RESTARTS"]); err != nil || (n > 0) != w.restarted || (w.status != "" && r["STATUS"] != w.status) {
				t.Errorf("tug pods: %v, want STATUS %q and restarts %v", r, w.status, w.restarted)
			}
			cs, err := tg.podContainers(tg.uid(c.name))
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, ct := range cs {
				names = append(names, fmt.Sprintf("%s#%d", ct.Name(), ct.Attempt()))
				switch {
				case ct.Name() == "app" && w.appNever:
					t.Errorf("an app container was created although its init container failed: %v", ct)
				case !w.restarted && ct.Attempt() != 0:
					t.Errorf("restarted: %v", ct)
				}
			}
			if w.restarted {
				return
			}
			if len(cs) != 1 {
				t.Fatalf("containers %v, want only the first attempt of one", names)
			}
			ct := cs[0]
			code, _, ok := ct.exit()
			wantCode := 0
			if c.app == "exit 1" || w.initFailing {
				wantCode = 1
			}
			if !ok || code != wantCode || ct.Status == containerd.Running {
				t.Errorf("container %v: exit %d (recorded %v), want %d", ct, code, ok, wantCode)
			}
		})
	}
}

// terminal reports whether a pod in phase p is done for good.
func terminal(p pod.Phase) bool { return p == pod.PhaseSucceeded || p == pod.PhaseFailed }

// policyPod returns a manifest with restartPolicy policy, one app container
// "app" running app and, when init is set, one init container "init"
// running init before it.
func policyPod(name, image, policy, init, app string) string {
	p := podYAML{name: name, restartPolicy: policy, containers: []ctrYAML{{name: "app", image: image, script: app}}}
	if init != "" {
		p.init = []ctrYAML{{name: "init", image: image, script: init}}
	}
	return p.String()
}

// taskStart is a /tasks/start event of the test's namespace.
type taskStart struct {
	at        time.Time // containerd's timestamp
	id        string
	container string // tug's container name label
	attempt   int    // tug's attempt label
}

// taskStarts records the task starts of the test's namespace, in order.
type taskStarts struct {
	mu      sync.Mutex
	list    []taskStart
	err     error
	changed chan struct{} // closed and replaced on each change
}

// recordTaskStarts subscribes to containerd's /tasks/start events of the
// test's namespace until the test ends.
func (tg *tug) recordTaskStarts() *taskStarts {
	ctx, cancel := context.WithCancel(context.Background())
	tg.t.Cleanup(cancel)
	r := &taskStarts{changed: make(chan struct{})}
	envelopes, errs := tg.client.Subscribe(ctx, fmt.Sprintf("namespace==%q,topic==%q", tg.ns, "/tasks/start"))
	go func() {
		for {
			var s taskStart
			select {
			case env := <-envelopes:
				ev, err := typeurl.UnmarshalAny(env.Event)
				if err != nil {
					r.fail(err)
					return
				}
				start, ok := ev.(*apievents.TaskStart)
				if !ok {
					continue
				}
				s = taskStart{at: env.Timestamp, id: start.ContainerID, attempt: -1}
				lctx, lcancel := context.WithTimeout(ctx, queryTimeout)
				if c, err := tg.client.LoadContainer(lctx, start.ContainerID); err == nil {
					if labels, err := c.Labels(lctx); err == nil {
						s.container = labels[podlabels.LabelContainer]
						s.attempt = ctr{Labels: labels}.Attempt()
					}
				}
				lcancel()
			case err := <-errs:
				if ctx.Err() == nil {
					r.fail(fmt.Errorf("containerd event stream: %v", err))
				}
				return
			}
			r.mu.Lock()
			r.list = append(r.list, s)
			close(r.changed)
			r.changed = make(chan struct{})
			r.mu.Unlock()
		}
	}()
	return r
}

func (r *taskStarts) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err = err
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *taskStarts) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.list)
}

// wait waits for the start of the attempt-th task (counting from 0) and
// checks that it is that attempt of a container.
func (r *taskStarts) wait(t *testing.T, attempt int, timeout time.Duration) taskStart {
	t.Helper()
	deadline := time.After(timeout)
	for {
		r.mu.Lock()
		list, err, changed := r.list, r.err, r.changed
		r.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		if len(list) > attempt {
			s := list[attempt]
			if s.attempt != attempt {
				t.Fatalf("task start %d is %s, attempt %d (container %q), want attempt %d", attempt, s.id, s.attempt, s.container, attempt)
			}
			return s
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("timed out after %v waiting for attempt %d to start; starts so far: %+v", timeout, attempt, list)
		}
	}
}
