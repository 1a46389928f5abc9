//go:build e2e

package e2e

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"

	"tug/internal/api"
	"tug/internal/pod"
	"tug/internal/podview"
	"tug/internal/testutil"
)

// What an operator sees of a pod that goes and of a pod whose update is
// stuck: "tug pods" and the pod API.

// TestTerminatingShown: a pod whose manifest is removed stays in "tug pods"
// as Terminating, and in the API with its deletionTimestamp, its grace
// period and Ready False, while its container (which ignores SIGTERM) waits
// out the grace period; then it is gone.
func TestTerminatingShown(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	const grace = 8
	tg.writeManifest("stubborn.yaml", podYAML{name: "stubborn", grace: grace, containers: []ctrYAML{
		{name: "main", image: tg.image, script: `trap "" TERM; while :; do sleep 1; done`}}}.String())
	c := tg.waitRunning(startTimeout, "stubborn", "main", 0)
	tg.waitPod(startTimeout, "stubborn", "Ready", func(v *podview.View) error {
		if conditionOf(v, pod.ConditionReady).Status != "True" {
			return errors.New("not Ready")
		}
		return nil
	})

	removed := time.Now()
	if err := os.Remove(tg.manifestPath("stubborn.yaml")); err != nil {
		t.Fatal(err)
	}
	name := staticName("stubborn")
	tg.waitFor(grace*time.Second, "tug pods: stubborn Terminating", func() (bool, error) {
		rows, _, err := tg.podTable()
		if err != nil {
			return false, err
		}
		if s := rows[name]["STATUS"]; s != "Terminating" {
			return false, fmt.Errorf("STATUS %q (rows %v)", s, rows)
		}
		return true, nil
	})
	v, err := tg.podView("stubborn")
	if err != nil {
		t.Fatalf("GET the pod while it terminates: %v", err)
	}
	seen := time.Now()
	m := v.Metadata
	if m.DeletionTimestamp == nil || m.DeletionTimestamp.Before(removed.Add(-time.Second)) || m.DeletionTimestamp.After(seen) {
		t.Errorf("deletionTimestamp %v, want between the removal (%v) and now (%v)", m.DeletionTimestamp, removed, seen)
	}
	if m.DeletionGracePeriodSeconds == nil || *m.DeletionGracePeriodSeconds != grace {
		t.Errorf("deletionGracePeriodSeconds %v, want %d", m.DeletionGracePeriodSeconds, grace)
	}
	if r := conditionOf(&v, pod.ConditionReady); r.Status != "False" || r.Reason != pod.ReasonTerminating {
		t.Errorf("Ready condition %+v, want False (%s)", r, pod.ReasonTerminating)
	}
	if cs := statusOf(&v, "main"); cs.State.Running == nil || cs.ContainerID != "containerd://"+c.ID {
		t.Errorf("main %+v, want container %s still running", cs, c.ID)
	}
	if now, ok, err := tg.container(tg.uid("stubborn"), "main"); err != nil || !ok || now.Status != containerd.Running {
		t.Errorf("container main %v (found %v, %v): want it running out its grace period", now, ok, err)
	}
	list, err := tg.api().Pods(t.Context())
	if err != nil || len(list.Items) != 1 || list.Items[0].Metadata.DeletionTimestamp == nil {
		t.Errorf("GET /pods: %+v (%v), want the pod with its deletionTimestamp", list.Items, err)
	}

	tg.waitFor(grace*time.Second+30*time.Second, "the pod to be gone", func() (bool, error) {
		_, err := tg.podView("stubborn")
		if errors.Is(err, api.ErrNotFound) {
			return true, nil
		}
		return false, fmt.Errorf("GET the pod: %v", err)
	})
	if took := time.Since(removed); took < (grace-1)*time.Second {
		t.Errorf("the pod was gone %v after its removal, before its %d s grace period", took, grace)
	}
	if cs, err := tg.podContainers(tg.uid("stubborn")); err != nil || len(cs) != 0 {
		t.Errorf("containers left: %v (%v)", cs, err)
	}
	if rows, _, err := tg.podTable(); err == nil && rows[name] != nil {
		t.Errorf("tug pods still lists the pod: %v", rows[name])
	}
	t.Logf("gone %v after the manifest was removed", time.Since(removed).Round(100*time.Millisecond))
}

// TestUpdateBlockedOnPull: a running pod updated to an image that cannot
// be pulled, with rollback off, keeps its old container (same ID and PID);
// its status says so truthfully: the container's image is the old one,
// STATUS "Running (update: ImagePullBackOff)", a False tug.io/UpdateReady
// condition, an UpdateBlocked event and a Progressing rollout entry with
// the reason. The manifest set back clears it all, with no restart.
func TestUpdateBlockedOnPull(t *testing.T) {
	t.Parallel()
	ref := testutil.RegistryImage(t)
	registry := os.Getenv(testutil.EnvRegistry)
	tg := startTug(t, tugOpts{args: rolloutArgs, beforeStart: func(tg *tug) { tg.relay(registry) }})
	noRollback := map[string]string{pod.AnnotationRolloutTimeout: "0"}
	const script = "while :; do sleep 1; done"
	good := rolloutPod("upd", tg.image, script, noRollback, "")
	tg.writeManifest("upd.yaml", good)
	c := tg.waitRunning(startTimeout, "upd", "main", 0)
	tg.waitMainReady("upd", "the first spec runs")

	missing := ref[:strings.LastIndex(ref, ":")] + ":no-such-tag"
	tg.writeManifest("upd.yaml", rolloutPod("upd", missing, script, noRollback, ""))
	name := staticName("upd")
	tg.waitFor(startTimeout, "tug pods: upd Running (update: ImagePullBackOff)", func() (bool, error) {
		rows, _, err := tg.podTable()
		if err != nil {
			return false, err
		}
		if s := rows[name]["STATUS"]; s != "Running (update: ImagePullBackOff)" {
			return false, fmt.Errorf("STATUS %q", s)
		}
		return true, nil
	})
	v, err := tg.podView("upd")
	if err != nil {
		t.Fatal(err)
	}
	if v.Spec.Containers[0].Image != missing {
		t.Errorf("spec image %q, want the update's %q", v.Spec.Containers[0].Image, missing)
	}
	cs := statusOf(&v, "main")
	if cs.State.Running == nil || !cs.Ready || cs.ContainerID != "containerd://"+c.ID || cs.Image != tg.image || cs.ImageID == "" {
		t.Errorf("main %+v, want the old container %s running and ready, with image %s", cs, c.ID, tg.image)
	}
	u := conditionOf(&v, pod.ConditionUpdateReady)
	if u.Status != "False" || u.Reason != pod.ReasonImagePullBackOff || !strings.Contains(u.Message, missing) || !strings.Contains(u.Message, "keeps running") {
		t.Errorf("%s condition %+v, want False (ImagePullBackOff) naming the image", pod.ConditionUpdateReady, u)
	}
	if r := conditionOf(&v, pod.ConditionReady); r.Status != "True" {
		t.Errorf("Ready %+v, want True: the old container serves", r)
	}
	tg.waitFor(10*time.Second, "the UpdateBlocked event", func() (bool, error) {
		reasons := tg.eventReasons(v.Metadata.UID)
		for _, r := range reasons {
			if r == "UpdateBlocked" {
				return true, nil
			}
		}
		return false, fmt.Errorf("events %v", reasons)
	})
	tg.waitFor(10*time.Second, "the rollout entry saying why", func() (bool, error) {
		h, err := tg.history("upd")
		if err != nil {
			return false, err
		}
		last := h.Entries[len(h.Entries)-1]
		if last.Outcome != "Progressing" || !strings.HasPrefix(last.Reason, "ImagePull") || h.Failed != "" {
			return false, fmt.Errorf("history %+v", h)
		}
		return true, nil
	})
	if now, ok, err := tg.container(tg.uid("upd"), "main"); err != nil || !ok || now.ID != c.ID || now.PID != c.PID || now.Status != containerd.Running {
		t.Errorf("container main %v (found %v, %v), want %s (pid %d) running", now, ok, err, c.ID, c.PID)
	}

	tg.writeManifest("upd.yaml", good)
	tg.waitPod(startTimeout, "upd", "the update no longer blocked", func(v *podview.View) error {
		if u := conditionOf(v, pod.ConditionUpdateReady); u.Type != "" {
			return fmt.Errorf("condition %+v", u)
		}
		return nil
	})
	tg.waitFor(10*time.Second, "tug pods: upd Running", func() (bool, error) {
		rows, _, err := tg.podTable()
		if err != nil {
			return false, err
		}
		if s := rows[name]["STATUS"]; s != "Running" {
			return false, fmt.Errorf("STATUS %q", s)
		}
		return true, nil
	})
	if now, ok, err := tg.container(tg.uid("upd"), "main"); err != nil || !ok || now.ID != c.ID || now.PID != c.PID {
		t.Errorf("container main %v (found %v, %v), want %s (pid %d) never restarted", now, ok, err, c.ID, c.PID)
	}
}
