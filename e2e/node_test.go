//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"tug/internal/pod"
	"tug/internal/podview"
	"tug/internal/testutil"
)

// apiPod returns the pod with this UID from GET /pods.
func (tg *tug) apiPod(uid string) (podview.View, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	list, err := tg.api().Pods(ctx)
	if err != nil {
		return podview.View{}, false, err
	}
	for _, v := range list.Items {
		if v.Metadata.UID == uid {
			return v, true, nil
		}
	}
	return podview.View{}, false, nil
}

// reasonIs checks a pod's phase, status.reason and that its message
// contains msg.
func reasonIs(phase pod.Phase, reason, msg string) func(v *podview.View) error {
	return func(v *podview.View) error {
		if v.Status.Phase != phase || v.Status.Reason != reason || !strings.Contains(v.Status.Message, msg) {
			return fmt.Errorf("phase %q reason %q message %q, want %q %q with %q", v.Status.Phase, v.Status.Reason, v.Status.Message, phase, reason, msg)
		}
		return nil
	}
}

// assertRefused checks that the refused pod named name has no container in
// containerd and that tug pods shows reason as its STATUS; it returns the
// lines tug pods prints below its table.
func (tg *tug) assertRefused(name, reason string) []string {
	tg.t.Helper()
	if cs, err := tg.podContainers(tg.uid(name)); err != nil || len(cs) != 0 {
		tg.t.Errorf("refused pod %s has containers: %v, %v", name, cs, err)
	}
	rows, rest, err := tg.podTable()
	if err != nil {
		tg.t.Fatal(err)
	}
	if r := rows[staticName(name)]; r["STATUS"] != reason {
		tg.t.Errorf("tug pods row of %s: %v, want STATUS %s", name, r, reason)
	}
	return rest
}

// removeManifest deletes a manifest file.
func (tg *tug) removeManifest(name string) {
	tg.t.Helper()
	if err := os.Remove(tg.manifestPath(name)); err != nil {
		tg.t.Fatal(err)
	}
}

// waitGone waits until the pod with this UID has no container left.
func (tg *tug) waitGone(timeout time.Duration, uid, what string) {
	tg.t.Helper()
	tg.waitFor(timeout, what, func() (bool, error) {
		cs, err := tg.podContainers(uid)
		if err != nil {
			return false, err
		}
		if len(cs) > 0 {
			return false, fmt.Errorf("containers left: %v", cs)
		}
		return true, nil
	})
}

// TestOrphansOfRemovedSource: the pods of a
// --manifest-url that is changed or removed are shown as orphaned while
// the configured sources have not all reported, then removed; the file
// source's pods are not touched.
func TestOrphansOfRemovedSource(t *testing.T) {
	t.Parallel()
	image, _ := testutil.TestImage(t)
	srv := newManifestServer(t, good(shPod("urlpod", image, idle)))
	tg := urlTug(t, srv.url)
	tg.writeManifest("local.yaml", shPod("local", tg.image, idle))
	urlPod := urlUID(srv.url, "urlpod")
	tg.waitRunningUID(startTimeout, urlPod, "main", 0)
	tg.waitRunning(startTimeout, "local", "main", 0)
	local := tg.tasksOf(tg.uid("local"))

	// The URL changes to one that does not answer (yet): the old URL's pod
	// keeps running, and tug pods shows it as orphaned.
	if err := tg.Stop(); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	newURL := "http://" + l.Addr().String() + "/pods.yaml"
	l.Close() // nothing answers there
	tg.args = []string{"--manifest-url", newURL, "--http-check-frequency", httpCheck.String()}
	tg.Start()
	tg.waitFor(startTimeout, "the old URL's pod shown as orphaned", func() (bool, error) {
		v, ok, err := tg.apiPod(urlPod)
		if err != nil || !ok {
			return false, fmt.Errorf("GET /pods has no pod %s: %v", urlPod, err)
		}
		return true, reasonIs(pod.PhaseRunning, pod.ReasonOrphaned, "no longer configured")(&v)
	})
	rows, _, err := tg.podTable()
	if err != nil {
		t.Fatal(err)
	}
	if r := rows[staticName("urlpod")]; r["STATUS"] != pod.ReasonOrphaned {
		t.Errorf("tug pods row of the old URL's pod: %v, want STATUS Orphaned", r)
	}
	time.Sleep(3 * time.Second) // housekeeping runs every 2 s
	if cs, err := tg.podContainers(urlPod); err != nil || len(cs) == 0 {
		t.Fatalf("the old URL's pod was removed while the new URL has not answered: %v, %v", cs, err)
	}

	// No URL at all: every configured source has reported, so the pod goes.
	if err := tg.Stop(); err != nil {
		t.Fatal(err)
	}
	tg.args = nil
	tg.Start()
	tg.waitGone(removeTimeout, urlPod, "the removed URL's pod to be removed")
	tg.waitFor(apiTimeout, "the removed pod to leave GET /pods", func() (bool, error) {
		_, ok, err := tg.apiPod(urlPod)
		return !ok, err
	})
	if err := tg.sameTasks(local); err != nil {
		t.Errorf("the file's pod: %v", err)
	}
}

// TestHostPortConflicts: a hostPort another pod has,
// or a program on the node listens on, refuses the pod with a status that
// says so; it starts once the port is free.
func TestHostPortConflicts(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	tg.writeManifest("a.yaml", webPod("a", tg.image, 8088))
	tg.waitPod(startTimeout, "a", "running", phaseIs(pod.PhaseRunning))
	tg.writeManifest("b.yaml", webPod("b", tg.image, 8088))
	tg.waitPod(startTimeout, "b", "refused for its hostPort", reasonIs(pod.PhasePending, pod.ReasonHostPortInUse, "hostPort 8088/TCP is in use"))
	rest := tg.assertRefused("b", pod.ReasonHostPortInUse)
	if !slicesContainPrefix(rest, staticName("b")+": hostPort 8088/TCP is in use") {
		t.Errorf("tug pods does not say why b waits: %q", rest)
	}

	// A program on the node listens on 2222: a pod with that hostPort is
	// refused, and the program keeps its port.
	l := listenIn(t, tg.netns, "tcp4", ":2222")
	defer l.Close()
	tg.writeManifest("c.yaml", webPod("c", tg.image, 2222))
	tg.waitPod(startTimeout, "c", "refused for its hostPort", reasonIs(pod.PhasePending, pod.ReasonHostPortInUse, "hostPort 2222/TCP is in use"))

	// a goes: b gets the port and runs.
	tg.removeManifest("a.yaml")
	tg.waitPod(removeTimeout+startTimeout, "b", "running once a is gone", phaseIs(pod.PhaseRunning))
}

// TestLimits: pods beyond --max-pods are not
// started and say why, and the one left out starts when another is
// removed; a pod over the container cap is refused with a clear error;
// tug pods prints a hostPath with terminal escapes escaped.
func TestLimits(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{args: []string{"--max-pods", "3"}, beforeStart: func(tg *tug) {
		// By name: esc, pa and pb are admitted, pc is held back.
		for _, n := range []string{"pa", "pb", "pc"} {
			tg.writeManifest(n+".yaml", shPod(n, tg.image, idle))
		}
		tg.writeManifest("esc.yaml", shPod("esc", tg.image, idle, `      volumeMounts: [{name: v, mountPath: /v}]
  volumes:
    - name: v
      hostPath: {path: "/nonexistent\e]0;owned\a\e[2J", type: Directory}
`))
	}})
	tg.waitPod(startTimeout, "pa", "running", phaseIs(pod.PhaseRunning))
	tg.waitPod(startTimeout, "pb", "running", phaseIs(pod.PhaseRunning))
	tg.waitPod(startTimeout, "pc", "held back by --max-pods", reasonIs(pod.PhasePending, pod.ReasonOutOfPods, "--max-pods"))
	tg.assertRefused("pc", pod.ReasonOutOfPods)

	// The hostPath's escapes reach tug pods escaped, never raw.
	tg.waitPod(startTimeout, "esc", "failing on its hostPath", func(v *podview.View) error {
		if !strings.Contains(v.Status.Message, "\x1b") {
			return fmt.Errorf("message %q", v.Status.Message)
		}
		return nil
	})
	out, _, code := tg.runCLI("pods", "-o", "wide")
	if code != 0 || strings.ContainsAny(out, "\x1b\a") || !strings.Contains(out, `/nonexistent\x1b]0;owned\a\x1b[2J`) {
		t.Errorf("tug pods (exit %d) does not escape the hostPath:\n%q", code, out)
	}

	// Over the container cap: refused, and the error says the cap.
	var many strings.Builder
	for i := range pod.MaxContainers + 1 {
		fmt.Fprintf(&many, "    - {name: c%d, image: %s}\n", i, tg.image)
	}
	tg.writeManifest("many.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: many\nspec:\n  containers:\n"+many.String())
	tg.waitFor(startTimeout, "many.yaml refused for its containers", func() (bool, error) {
		out, _, _ := tg.runCLI("pods")
		return strings.Contains(out, "65 containers (init containers included): tug runs at most 64 per pod"), fmt.Errorf("tug pods: %q", out)
	})

	tg.removeManifest("pa.yaml")
	tg.waitPod(removeTimeout+startTimeout, "pc", "running once pa is gone", phaseIs(pod.PhaseRunning))
}

// TestDuplicateAcrossSourcesFileWins: a pod that the
// URL and a file both define runs from the file, even when the URL's copy
// ran first, and the URL's manifest says why; a restart changes nothing.
func TestDuplicateAcrossSourcesFileWins(t *testing.T) {
	t.Parallel()
	image, _ := testutil.TestImage(t)
	srv := newManifestServer(t, good(shPod("dup", image, idle)))
	tg := urlTug(t, srv.url)
	urlCopy := urlUID(srv.url, "dup")
	tg.waitRunningUID(startTimeout, urlCopy, "main", 0)

	tg.writeManifest("dup.yaml", shPod("dup", tg.image, idle))
	tg.waitRunning(startTimeout, "dup", "main", 0)
	tg.waitGone(removeTimeout, urlCopy, "the URL's copy to be removed")
	tg.waitURLManifest(fetchTimeout, srv.url, "the duplicate reported on the URL's manifest", func(m *podview.ManifestStatus) error {
		if !strings.Contains(m.Error, "is already defined in "+tg.manifestPath("dup.yaml")) {
			return fmt.Errorf("error %q", m.Error)
		}
		return nil
	})
	running := tg.tasksOf(tg.uid("dup"))

	if err := tg.Stop(); err != nil {
		t.Fatal(err)
	}
	tg.Start()
	tg.waitURLManifest(fetchTimeout, srv.url, "the URL polled again", healthyFetchOr(func(m *podview.ManifestStatus) error {
		if !strings.Contains(m.Error, "is already defined in") {
			return fmt.Errorf("error %q", m.Error)
		}
		return nil
	}))
	time.Sleep(2 * time.Second)
	if err := tg.sameTasks(running); err != nil {
		t.Errorf("after a restart, the file's copy: %v", err)
	}
	if cs, err := tg.podContainers(urlCopy); err != nil || len(cs) != 0 {
		t.Errorf("after a restart, the URL's copy has containers: %v, %v", cs, err)
	}
}

// healthyFetchOr checks that the URL item has been fetched and passes check.
func healthyFetchOr(check func(m *podview.ManifestStatus) error) func(m *podview.ManifestStatus) error {
	return func(m *podview.ManifestStatus) error {
		if m.Fetch == nil || m.Fetch.LastFetch.IsZero() {
			return fmt.Errorf("not fetched yet")
		}
		return check(m)
	}
}
