//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tug/internal/pod"
	"tug/internal/podview"
	"tug/internal/source"
	"tug/internal/testutil"
)

// Health-gated updates with rollback. Every test runs tug with
// a short --rollout-min-ready, makes a good spec, updates it to a bad one
// and checks that the pod returns to the good spec, with the condition,
// the event, the STATUS and the history saying so.

// rolloutArgs are the flags of the rollout tests: a spec is good after 2 s
// Ready, restarts come quickly.
var rolloutArgs = []string{"--rollout-min-ready", "2s", "--crash-loop-back-off-initial", "1s", "--crash-loop-back-off-max", "2s"}

// rolloutPod is pod name whose container main runs script from image,
// with annotations and container lines extra (six spaces).
func rolloutPod(name, image, script string, annotations map[string]string, extra string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n", name)
	if len(annotations) > 0 {
		b.WriteString("  annotations:\n")
		for k, v := range annotations {
			fmt.Fprintf(&b, "    %s: %q\n", k, v)
		}
	}
	fmt.Fprintf(&b, "spec:\n  terminationGracePeriodSeconds: 2\n  containers:\n    - name: main\n      image: %s\n      command: [\"sh\", \"-c\", %q]\n%s", image, script, extra)
	return b.String()
}

// history returns the rollout history of the pod named name.
func (tg *tug) history(name string) (pod.RolloutHistory, error) {
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	return tg.api().History(ctx, "default", staticName(name))
}

// waitGood waits until the pod's current spec is its last good spec, and
// returns that spec's hash.
func (tg *tug) waitGood(name string, not string) string {
	tg.t.Helper()
	var h pod.RolloutHistory
	tg.waitFor(startTimeout+10*time.Second, "pod "+name+": a last good spec", func() (bool, error) {
		var err error
		if h, err = tg.history(name); err != nil {
			return false, err
		}
		if h.GoodHash == "" || h.GoodHash == not {
			return false, fmt.Errorf("good %q (history %+v)", h.GoodHash, h.Entries)
		}
		return true, nil
	})
	return h.GoodHash
}

// waitRolledBack waits until the pod shows its rollback: condition
// RolloutFailed with reason RolledBack whose message has msg, STATUS
// RolledBack in tug pods, the RolledBack event, and the history ending
// with the failed spec RolledBack; the good spec is still good.
func (tg *tug) waitRolledBack(timeout time.Duration, name, good, msg string) podview.View {
	tg.t.Helper()
	v := tg.waitPod(timeout, name, "rolled back", func(v *podview.View) error {
		c := conditionOf(v, "RolloutFailed")
		if c.Status != "True" || c.Reason != pod.ReasonRolledBack || !strings.Contains(c.Message, msg) {
			return fmt.Errorf("RolloutFailed condition %+v, want RolledBack with %q", c, msg)
		}
		if v.Status.Reason != pod.ReasonRolledBack {
			return fmt.Errorf("reason %q", v.Status.Reason)
		}
		return nil
	})
	h, err := tg.history(name)
	if err != nil {
		tg.t.Fatal(err)
	}
	last := h.Entries[len(h.Entries)-1]
	if h.GoodHash != good || h.Failed == "" || h.Failed == good || last.Hash != h.Failed || last.Outcome != "RolledBack" {
		tg.t.Fatalf("history after the rollback: %+v", h)
	}
	if !strings.Contains(tg.cli("pods"), pod.ReasonRolledBack) {
		tg.t.Errorf("tug pods does not show RolledBack:\n%s", tg.cli("pods"))
	}
	tg.waitFor(5*time.Second, "the RolledBack event", func() (bool, error) {
		for _, r := range tg.eventReasons(v.Metadata.UID) {
			if r == pod.ReasonRolledBack {
				return true, nil
			}
		}
		return false, fmt.Errorf("events %v", tg.eventReasons(v.Metadata.UID))
	})
	return v
}

// waitMainReady waits until container main of the pod named name runs
// and is ready.
func (tg *tug) waitMainReady(name, what string) {
	tg.t.Helper()
	tg.waitPod(startTimeout, name, what, func(v *podview.View) error {
		if cs := statusOf(v, "main"); cs.State.Running == nil || !cs.Ready {
			return fmt.Errorf("main is not running and ready: %+v", cs.State)
		}
		return nil
	})
}

// cli runs a tug client command against this tug and returns its
// stdout; it fails the test when the command fails.
func (tg *tug) cli(args ...string) string {
	tg.t.Helper()
	out, errOut, code := tg.runCLI(args...)
	if code != 0 {
		tg.t.Fatalf("tug %v: exit %d\n%s", args, code, errOut)
	}
	return out
}

// serving counts the failed GETs of http://ip:8080/ while it runs. A GET
// may take up to 5 s: a refused or reset connection is what says the pod
// stopped serving, not a slow answer on a loaded machine.
type serving struct {
	stop   chan struct{}
	done   sync.WaitGroup
	ok     atomic.Int64
	failed atomic.Int64
	last   atomic.Value // string: the last error
}

func (tg *tug) keepGetting(ip string) *serving {
	s := &serving{stop: make(chan struct{})}
	client := httpClientIn(tg.netns, 5*time.Second)
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		for {
			select {
			case <-s.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			resp, err := client.Get("http://" + ip + ":8080/index.html")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					err = fmt.Errorf("status %d", resp.StatusCode)
				}
			}
			if err != nil {
				s.failed.Add(1)
				s.last.Store(err.Error())
			} else {
				s.ok.Add(1)
			}
		}
	}()
	return s
}

func (s *serving) end() (ok, failed int64, last string) {
	close(s.stop)
	s.done.Wait()
	last, _ = s.last.Load().(string)
	return s.ok.Load(), s.failed.Load(), last
}

const rolloutWeb = "mkdir -p /www && echo %s > /www/index.html && exec httpd -f -p 8080 -h /www"

// TestRolloutMissingImageRollsBack: an update to an image tag the
// registry does not have fails (ErrImagePull, or ImagePullBackOff when the
// controller, judging every 5 s at rest, first sees it after the first
// retry) and is rolled back within
// the timeout, while the old container keeps serving HTTP on the same pod
// IP all along (the image is pulled before the old container is stopped).
func TestRolloutMissingImageRollsBack(t *testing.T) {
	t.Parallel()
	ref := testutil.RegistryImage(t)
	registry := os.Getenv(testutil.EnvRegistry)
	tg := startTug(t, tugOpts{args: rolloutArgs, beforeStart: func(tg *tug) { tg.relay(registry) }})
	tg.writeManifest("web.yaml", rolloutPod("web", tg.image, fmt.Sprintf(rolloutWeb, "v1"), map[string]string{"tug.io/rollout-timeout": "40s"}, ""))
	c := tg.waitRunning(startTimeout, "web", "main", 0)
	good := tg.waitGood("web", "")
	ip := tg.podIPOf("web")
	get := tg.keepGetting(ip)

	missing := ref[:strings.LastIndex(ref, ":")] + ":no-such-tag"
	began := time.Now()
	tg.writeManifest("web.yaml", rolloutPod("web", missing, fmt.Sprintf(rolloutWeb, "v2"), map[string]string{"tug.io/rollout-timeout": "40s"}, ""))
	v := tg.waitRolledBack(40*time.Second, "web", good, "ImagePull")
	took := time.Since(began)
	time.Sleep(time.Second) // serving still, after the rollback
	ok, failed, last := get.end()
	if failed > 0 || ok == 0 {
		t.Errorf("during the update: %d GETs answered, %d failed (last: %s)", ok, failed, last)
	}
	if v.Status.PodIP != ip {
		t.Errorf("pod IP %s after the rollback, was %s", v.Status.PodIP, ip)
	}
	now, found, err := tg.container(tg.uid("web"), "main")
	if err != nil || !found || now.ID != c.ID {
		t.Errorf("container main is %+v (found %v, %v), want the same container %s", now, found, err, c.ID)
	}
	t.Logf("rolled back %v after the update; %d GETs answered, none failed", took.Round(time.Millisecond), ok)

	// The failed spec is not tried again: nothing changes for a while.
	time.Sleep(3 * time.Second)
	if h, _ := tg.history("web"); len(h.Entries) != 2 {
		t.Errorf("history %+v, want the good spec and the failed one only", h.Entries)
	}
	// A new content is tried, and becomes good.
	tg.writeManifest("web.yaml", rolloutPod("web", tg.image, fmt.Sprintf(rolloutWeb, "v3"), map[string]string{"tug.io/rollout-timeout": "40s"}, ""))
	tg.waitGood("web", good)
	tg.waitPod(10*time.Second, "web", "no RolloutFailed condition", func(v *podview.View) error {
		if c := conditionOf(v, "RolloutFailed"); c.Type != "" {
			return fmt.Errorf("condition %+v", c)
		}
		return nil
	})
}

// TestRolloutCrashingUpdateRollsBack: an update whose container exits 1
// is rolled back once it restarted more than tug.io/rollout-max-restarts
// times; the good spec runs again.
func TestRolloutCrashingUpdateRollsBack(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{args: rolloutArgs})
	ann := map[string]string{"tug.io/rollout-max-restarts": "1", "tug.io/rollout-timeout": "60s"}
	tg.writeManifest("crash.yaml", rolloutPod("crash", tg.image, fmt.Sprintf(rolloutWeb, "v1"), ann, ""))
	tg.waitRunning(startTimeout, "crash", "main", 0)
	good := tg.waitGood("crash", "")
	tg.writeManifest("crash.yaml", rolloutPod("crash", tg.image, "echo broken; exit 1", ann, ""))
	tg.waitRolledBack(45*time.Second, "crash", good, "restarted 2 times")
	tg.waitMainReady("crash", "the good spec runs")
}

// TestRolloutNeverReadyRollsBack: an update whose readiness probe never
// succeeds is rolled back at its timeout; with tug.io/rollout-timeout "0"
// the same update is left failing.
func TestRolloutNeverReadyRollsBack(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{args: rolloutArgs})
	readiness := "      readinessProbe:\n        httpGet: {path: %s, port: 8080}\n        periodSeconds: 1\n"
	for _, tc := range []struct {
		name    string
		timeout string
	}{{"never", "8s"}, {"noroll", "0"}} {
		ann := map[string]string{"tug.io/rollout-timeout": tc.timeout}
		tg.writeManifest(tc.name+".yaml", rolloutPod(tc.name, tg.image, fmt.Sprintf(rolloutWeb, "v1"), ann, fmt.Sprintf(readiness, "/index.html")))
	}
	goods := map[string]string{}
	for _, name := range []string{"never", "noroll"} {
		goods[name] = tg.waitGood(name, "")
	}
	for _, name := range []string{"never", "noroll"} {
		ann := map[string]string{"tug.io/rollout-timeout": map[string]string{"never": "8s", "noroll": "0"}[name]}
		tg.writeManifest(name+".yaml", rolloutPod(name, tg.image, fmt.Sprintf(rolloutWeb, "v2"), ann, fmt.Sprintf(readiness, "/missing")))
	}
	tg.waitRolledBack(30*time.Second, "never", goods["never"], "not ready within 8s")
	tg.waitPod(startTimeout, "never", "ready again on the good spec", func(v *podview.View) error {
		if conditionOf(v, pod.ConditionReady).Status != "True" {
			return fmt.Errorf("not Ready")
		}
		return nil
	})
	// "noroll" had as long (and more): still on its failing update.
	v, err := tg.podView("noroll")
	if err != nil {
		t.Fatal(err)
	}
	if c := conditionOf(&v, "RolloutFailed"); c.Type != "" || conditionOf(&v, pod.ConditionReady).Status == "True" {
		t.Errorf("rollout-timeout 0: condition %+v, Ready %s; want the update left failing", c, conditionOf(&v, pod.ConditionReady).Status)
	}
	if h, _ := tg.history("noroll"); h.Failed != "" || h.Entries[len(h.Entries)-1].Outcome != "Progressing" {
		t.Errorf("rollout-timeout 0: history %+v", h)
	}
}

// TestRolloutSurvivesTugKill: tug killed with SIGKILL while an update is
// watched goes on after its restart: the update still fails at its
// timeout (counted from when it was applied) and is rolled back; and tug
// rollback / tug history work by hand.
func TestRolloutSurvivesTugKill(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{args: rolloutArgs})
	readiness := "      readinessProbe:\n        httpGet: {path: %s, port: 8080}\n        periodSeconds: 1\n"
	ann := map[string]string{"tug.io/rollout-timeout": "12s"}
	tg.writeManifest("kill.yaml", rolloutPod("kill", tg.image, fmt.Sprintf(rolloutWeb, "v1"), ann, fmt.Sprintf(readiness, "/index.html")))
	good := tg.waitGood("kill", "")
	tg.writeManifest("kill.yaml", rolloutPod("kill", tg.image, fmt.Sprintf(rolloutWeb, "v2"), ann, fmt.Sprintf(readiness, "/missing")))
	tg.waitFor(10*time.Second, "the update watched", func() (bool, error) {
		h, err := tg.history("kill")
		if err != nil || len(h.Entries) < 2 || h.Entries[len(h.Entries)-1].Outcome != "Progressing" {
			return false, fmt.Errorf("history %+v, %v", h, err)
		}
		return true, nil
	})
	began := time.Now()
	tg.Kill()
	time.Sleep(2 * time.Second)
	tg.Start()
	tg.waitRolledBack(30*time.Second, "kill", good, "not ready within 12s")
	if took := time.Since(began); took > 25*time.Second {
		t.Errorf("rolled back %v after the kill: the timeout restarted with tug", took)
	}

	// By hand: a good update, then tug rollback returns to the one before.
	tg.writeManifest("kill.yaml", rolloutPod("kill", tg.image, fmt.Sprintf(rolloutWeb, "v3"), ann, fmt.Sprintf(readiness, "/index.html")))
	v3 := tg.waitGood("kill", good)
	tg.writeManifest("kill.yaml", rolloutPod("kill", tg.image, fmt.Sprintf(rolloutWeb, "v4"), map[string]string{"tug.io/rollout-timeout": "0"}, fmt.Sprintf(readiness, "/index.html")))
	tg.waitFor(10*time.Second, "v4 watched", func() (bool, error) {
		h, err := tg.history("kill")
		if err != nil || h.Entries[len(h.Entries)-1].Hash == v3 {
			return false, fmt.Errorf("history %+v, %v", h, err)
		}
		return true, nil
	})
	if out := tg.cli("rollback", "kill"); !strings.Contains(out, "rolling back") {
		t.Errorf("tug rollback: %q", out)
	}
	tg.waitRolledBack(15*time.Second, "kill", v3, "by hand")
	hist := tg.cli("history", "kill")
	for _, want := range []string{"HASH", "Succeeded", "RolledBack", "last good spec: " + v3[:12]} {
		if !strings.Contains(hist, want) {
			t.Errorf("tug history lacks %q:\n%s", want, hist)
		}
	}
}

// TestRolloutAtomicURLBundle: rolloutAtomicBundle with the bundles signed
// and served at a URL.
func TestRolloutAtomicURLBundle(t *testing.T) {
	t.Parallel()
	var srv *manifestServer
	rolloutAtomicBundle(t, func(key string, version int, body string) {
		a := answer{body: tugSign(t, key, body, "--version", strconv.Itoa(version))}
		if srv == nil {
			srv = newManifestServer(t, a)
		} else {
			srv.set(a)
		}
	}, func(args ...string) (*tug, string) { return urlTug(t, srv.url, args...), srv.url })
}

// TestRolloutAtomicOCIBundle: rolloutAtomicBundle with the bundles pushed
// by tug bundle push to a tag of a registry.
func TestRolloutAtomicOCIBundle(t *testing.T) {
	t.Parallel()
	reg := startRegistry(t, registryOpts{})
	ref := reg.Ref("tug/atomic:prod")
	dir := t.TempDir()
	rolloutAtomicBundle(t, func(key string, version int, body string) {
		bundlePush(t, "--key", key, "--version", strconv.Itoa(version), writeFile(t, dir, fmt.Sprintf("v%d.yaml", version), body), ref)
	}, func(args ...string) (*tug, string) {
		return startTug(t, tugOpts{
			args:        append([]string{"--manifest-oci", ref, "--oci-check-frequency", ociCheck.String()}, args...),
			beforeStart: func(tg *tug) { tg.relay(reg.Addr) },
		}), source.OCIPrefix + ref
	})
}

// rolloutAtomicBundle: a signed bundle whose pods are annotated
// tug.io/rollout: atomic is one unit, whichever remote source brings it
// (publish makes a version of the bundle the source's, start starts tug on
// the source with more flags and returns it and the source's name).
// Version 2 changes both pods, adds a third and one of its pods cannot get
// its image: every pod returns to version 1 (the added pod goes),
// /manifests reports version 2 failed and version 1 good; version 3 then
// applies and becomes good.
func rolloutAtomicBundle(t *testing.T, publish func(key string, version int, body string), start func(args ...string) (*tug, string)) {
	image, _ := testutil.TestImage(t)
	keys := t.TempDir()
	keyPair(t, keys, "k")
	key := filepath.Join(t.TempDir(), "k.pem")
	if err := os.Rename(filepath.Join(keys, "k.pem"), key); err != nil {
		t.Fatal(err)
	}
	atomic := map[string]string{"tug.io/rollout": "atomic", "tug.io/rollout-timeout": "30s"}
	bundle := func(version int, dbImage, dbExtra string, extraPod bool) {
		body := rolloutPod("web", image, fmt.Sprintf(rolloutWeb, fmt.Sprintf("web-v%d", version)), atomic, "") + "---\n" +
			rolloutPod("db", dbImage, fmt.Sprintf(rolloutWeb, fmt.Sprintf("db-v%d", version)), atomic, dbExtra)
		if extraPod {
			body += "---\n" + rolloutPod("extra", image, fmt.Sprintf(rolloutWeb, "extra"), atomic, "")
		}
		publish(key, version, body)
	}
	bundle(1, image, "", false)
	tg, src := start(append([]string{"--manifest-verify-key", keys}, rolloutArgs...)...)
	goodWeb, goodDB := tg.waitGood("web", ""), tg.waitGood("db", "")
	tg.waitURLManifest(20*time.Second, src, "version 1 good", func(m *podview.ManifestStatus) error {
		if r := m.Rollout; r == nil || r.GoodVersion != 1 || !r.Atomic || m.Version != 1 {
			return fmt.Errorf("version %d, rollout %+v", m.Version, r)
		}
		return nil
	})

	bundle(2, "docker.io/library/busybox:no-such-tag", "      imagePullPolicy: Never\n", true)
	m := tg.waitURLManifest(40*time.Second, src, "version 2 failed and held back", func(m *podview.ManifestStatus) error {
		if r := m.Rollout; r == nil || r.FailedVersion != 2 || !r.HeldBack || r.GoodVersion != 1 {
			return fmt.Errorf("version %d, rollout %+v", m.Version, r)
		}
		return nil
	})
	t.Logf("/manifests: %+v", *m.Rollout)
	tg.waitRolledBack(10*time.Second, "web", goodWeb, "ErrImageNeverPull")
	tg.waitRolledBack(10*time.Second, "db", goodDB, "ErrImageNeverPull")
	tg.waitGone(30*time.Second, urlUID(src, "extra"), "the pod version 2 added")
	for _, name := range []string{"web", "db"} {
		tg.waitPod(startTimeout, name, "version 1 running again", func(v *podview.View) error {
			if cs := statusOf(v, "main"); cs.State.Running == nil || !strings.Contains(strings.Join(v.Spec.Containers[0].Command, " "), name+"-v1") {
				return fmt.Errorf("main %+v, command %q", cs.State, v.Spec.Containers[0].Command)
			}
			return nil
		})
	}

	bundle(3, image, "", false)
	tg.waitGood("web", goodWeb)
	tg.waitGood("db", goodDB)
	tg.waitURLManifest(20*time.Second, src, "version 3 good", func(m *podview.ManifestStatus) error {
		if r := m.Rollout; r == nil || r.GoodVersion != 3 || r.FailedHash != "" || r.HeldBack {
			return fmt.Errorf("version %d, rollout %+v", m.Version, r)
		}
		return nil
	})
}

// TestRolloutTimeoutShorterThanMinReady: the rollout timeout bounds the
// time to become Ready, not the min-ready window. A pod Ready at once
// under a 3 s timeout and an 8 s window gets its last good spec, and a
// later crashing update is rolled back to it.
func TestRolloutTimeoutShorterThanMinReady(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{args: append(append([]string(nil), rolloutArgs...), "--rollout-min-ready", "8s")})
	short := map[string]string{"tug.io/rollout-timeout": "3s"}
	tg.writeManifest("quick.yaml", rolloutPod("quick", tg.image, "echo v1; "+idle, short, ""))
	tg.waitRunning(startTimeout, "quick", "main", 0)
	good := tg.waitGood("quick", "")
	h, err := tg.history("quick")
	if err != nil || len(h.Entries) != 1 || h.Entries[0].Outcome == "RolledBack" || h.Entries[0].Reason != "" {
		t.Fatalf("history of a pod Ready at once: %+v (%v)", h, err)
	}

	tg.writeManifest("quick.yaml", rolloutPod("quick", tg.image, "echo v2; exit 1", short, ""))
	tg.waitRolledBack(40*time.Second, "quick", good, "not ready within 3s")
	tg.waitMainReady("quick", "the good spec runs")
}
