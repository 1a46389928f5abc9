//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"tug/internal/api"
	"tug/internal/pod"
	"tug/internal/podview"
	"tug/internal/testutil"
)

// pidsLimit is the per-pod process limit the fork bomb runs under: far
// below the bomb's own bound, far below the host's pid_max.
const pidsLimit = 300

// bombForks bounds the fork bomb: it starts at most this many processes,
// each of which sleeps bombSleep and exits, so that even with no limit at
// all the bomb holds at most bombForks+2 pids of the shared host, for
// about bombSleep.
const (
	bombForks = 2 * pidsLimit
	bombSleep = 20
)

// bombScript starts bombForks sleeping processes as fast as it can, then
// idles. A fork the pids controller refuses makes the inner shell stop.
var bombScript = fmt.Sprintf(`sh -c 'i=0; while [ $i -lt %d ]; do sleep %d & i=$((i+1)); done; echo spawned $i'; echo bomb over; `+idle, bombForks, bombSleep)

// podPidsFile reads a pids controller file of the pod cgroup of uid.
func (tg *tug) podPidsFile(uid, name string) (string, error) {
	for _, class := range []string{"besteffort", "burstable", ""} {
		dir := filepath.Join(cgroupMount, tg.cgroupRoot(), class, "pod"+uid)
		if !cgroupV2() {
			dir = filepath.Join(cgroupMount, "pids", tg.cgroupRoot(), class, "pod"+uid)
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err == nil {
			return strings.TrimSpace(string(data)), nil
		}
		if !os.IsNotExist(err) {
			return "", err
		}
	}
	return "", fmt.Errorf("no %s for pod %s", name, uid)
}

// podCondition returns the condition typ of v, or nil.
func podCondition(v *podview.View, typ string) *pod.Condition {
	for i := range v.Status.Conditions {
		if v.Status.Conditions[i].Type == typ {
			return &v.Status.Conditions[i]
		}
	}
	return nil
}

// TestPodPidsLimit runs a bounded fork bomb in a URL pod: every pod gets a
// finite pids.max by default; under --pod-max-pids the bomb's cgroup
// never holds more than the limit, tug's API keeps answering, another pod
// keeps serving, and the bomb pod's status and events say it reached its
// process limit.
func TestPodPidsLimit(t *testing.T) {
	t.Parallel()
	image, _ := testutil.TestImage(t)
	web := webPod("web", image, 0)
	srv := newManifestServer(t, good(web))
	tg := urlTug(t, srv.url)
	webUID, bombUID := urlUID(srv.url, "web"), urlUID(srv.url, "bomb")
	tg.waitRunningUID(startTimeout, webUID, "main", 0)

	// The default: a finite limit on every pod.
	if got, err := tg.podPidsFile(webUID, "pids.max"); err != nil || got != "4096" {
		t.Errorf("web pod's pids.max with the default limit = %q, %v; want 4096", got, err)
	}

	// A small limit for the bomb.
	if err := tg.Stop(); err != nil {
		t.Fatal(err)
	}
	tg.args = append(tg.args, "--pod-max-pids", strconv.Itoa(pidsLimit))
	tg.Start()
	tg.waitFor(startTimeout, "web pod's pids.max set to the limit", func() (bool, error) {
		got, err := tg.podPidsFile(webUID, "pids.max")
		return got == strconv.Itoa(pidsLimit), err
	})
	var ip string
	tg.waitFor(startTimeout, "web pod IP", func() (bool, error) {
		v, ok, err := tg.apiPod(webUID)
		ip = v.Status.PodIP
		return ok && ip != "", err
	})
	serves := func() error {
		resp, err := tg.nodeHTTPClient().Get("http://" + ip + "/")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || !strings.Contains(string(b), "hello from") {
			return fmt.Errorf("web pod answered %q, %v", b, err)
		}
		return nil
	}
	if err := serves(); err != nil {
		t.Fatalf("web pod before the bomb: %v", err)
	}

	srv.set(good(web + "---\n" + shPod("bomb", image, bombScript)))
	tg.waitFor(startTimeout, "bomb pod's cgroup", func() (bool, error) {
		got, err := tg.podPidsFile(bombUID, "pids.max")
		return err == nil && got == strconv.Itoa(pidsLimit), nil
	})

	// Watch the bomb's cgroup while it forks.
	var peak atomic.Int64
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if s, err := tg.podPidsFile(bombUID, "pids.current"); err == nil {
				if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > peak.Load() {
					peak.Store(n)
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { stop(); <-done })

	tg.waitFor(startTimeout, "the bomb reported at its process limit", func() (bool, error) {
		v, ok, err := tg.apiPod(bombUID)
		if err != nil || !ok {
			return false, err
		}
		c := podCondition(&v, pod.ConditionPIDLimitReached)
		return c != nil && c.Status == "True", nil
	})
	// While the bomb holds its pids: the API answers and the web pod serves.
	ctxAPI, cancel := context.WithTimeout(context.Background(), apiTimeout)
	if _, err := tg.api().Pods(ctxAPI); err != nil {
		t.Errorf("API during the bomb: %v", err)
	}
	cancel()
	if err := serves(); err != nil {
		t.Errorf("web pod during the bomb: %v", err)
	}
	v, _, err := tg.apiPod(bombUID)
	if err != nil {
		t.Fatal(err)
	}
	c := podCondition(&v, pod.ConditionPIDLimitReached)
	t.Logf("bomb pod: reason %q message %q; condition %+v", v.Status.Reason, v.Status.Message, c)
	if v.Status.Reason != pod.ReasonPIDLimitReached || !strings.Contains(v.Status.Message, strconv.Itoa(pidsLimit)) {
		t.Errorf("bomb pod status reason %q message %q, want %s naming the limit %d", v.Status.Reason, v.Status.Message, pod.ReasonPIDLimitReached, pidsLimit)
	}
	if rows, _, err := tg.podTable(); err != nil {
		t.Error(err)
	} else if r := rows[staticName("bomb")]; r["STATUS"] != pod.ReasonPIDLimitReached {
		t.Errorf("tug pods row of the bomb: %v, want STATUS %s", r, pod.ReasonPIDLimitReached)
	}
	if w, ok, _ := tg.apiPod(webUID); !ok || podCondition(&w, pod.ConditionPIDLimitReached) != nil || w.Status.Reason != "" {
		t.Errorf("web pod status %+v, want no process limit reached", w.Status)
	}
	tg.waitFor(apiTimeout, "a PIDLimitReached event", func() (bool, error) {
		ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
		defer cancel()
		evs, err := tg.api().Events(ctx, api.EventQuery{})
		if err != nil {
			return false, err
		}
		for _, e := range evs {
			if e.InvolvedObject.UID == bombUID && e.Reason == pod.ReasonPIDLimitReached && e.Type == "Warning" {
				return true, nil
			}
		}
		return false, nil
	})

	time.Sleep(2 * time.Second) // the bomb's loop has stopped, one way or the other
	stop()
	<-done
	t.Logf("bomb pod cgroup: peak pids.current %d (limit %d, bomb bound %d)", peak.Load(), pidsLimit, bombForks)
	if p := peak.Load(); p > pidsLimit {
		t.Errorf("bomb pod's cgroup held %d processes, limit %d", p, pidsLimit)
	} else if p < pidsLimit/2 {
		t.Errorf("bomb pod's cgroup held at most %d processes: the bomb did not run", p)
	}
	if ev, err := tg.podPidsFile(bombUID, "pids.events"); err == nil {
		t.Logf("bomb pod cgroup's own pids.events: %q", ev)
	}
	if !tg.running() {
		t.Error("tug exited")
	}
}
