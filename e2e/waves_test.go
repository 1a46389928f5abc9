//go:build e2e

package e2e

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"tug/internal/podview"
	"tug/internal/source"
	"tug/internal/statusreport"
	"tug/internal/testutil"
	"tug/internal/wave"
)

// waveDevice is one tug of a fleet that follows one OCI bundle.
type waveDevice struct {
	node string
	tg   *tug
	r    *statusReceiver
	port int // its metrics port
}

// wavesOf returns the wave of the device's source in the status document
// (nil when none).
func waveOf(d statusreport.Document) *statusreport.Wave {
	for _, s := range d.Sources {
		for _, f := range s.Files {
			if f.Wave != nil {
				return f.Wave
			}
		}
	}
	return nil
}

// TestRolloutWaves: three tugs (a canary by its label, one inside and one
// outside the 50 % share of version 2) follow one bundle in the test's
// registry. Version 2's plan has three waves (labels at the start, 50 %
// 20 s later, everyone 40 s later): each device pulls the images ahead and
// waits, tug pods, the metrics and the status document say for which wave
// and until when, and each applies at its wave's time, never before.
// Version 3 crashes in wave 1; scripts/fleet-halt.sh reads the status
// documents, finds wave 1 failing and publishes the halt of version 3
// (version 4, with version 2's manifests): the other two devices keep
// version 2 past the times of waves 2 and 3, and every status document
// says what happened. A halt with revert (version 5) then sends the canary
// back to version 2's manifests and leaves the others as they are.
func TestRolloutWaves(t *testing.T) {
	t.Parallel()
	testutil.RequireCommand(t, "jq")
	image, _ := testutil.TestImage(t)
	reg := startRegistry(t, registryOpts{})
	dir := t.TempDir()
	_, pub := keyPair(t, dir, "k")
	key := filepath.Join(dir, "k.pem")
	ref := reg.Ref("tug/fleet:prod")
	name := source.OCIPrefix + ref

	// The share of a version is a hash of node name and version: pick the
	// names so that "half" of version 2 holds one and not the other.
	var in, out string
	for i := 0; in == "" || out == ""; i++ {
		n := fmt.Sprintf("wave-%d", i)
		if wave.Bucket(n, 2) < wave.Buckets/2 {
			in = cmp.Or(in, n)
		} else {
			out = cmp.Or(out, n)
		}
	}
	v1 := writeFile(t, dir, "v1.yaml", shPod("fleet", image, "echo v1; "+idle))
	v2 := writeFile(t, dir, "v2.yaml", shPod("fleet", image, "echo v2; "+idle))
	v3 := writeFile(t, dir, "v3.yaml", shPod("fleet", image, "echo v3; exit 1"))
	bundlePush(t, "--key", key, "--version", "1", v1, ref)

	start := func(node, labels string) *waveDevice {
		port := freePort(t)
		args := []string{"--manifest-oci", ref, "--oci-check-frequency", ociCheck.String(), "--manifest-verify-key", pub,
			"--hostname-override", node, "--healthz-port", strconv.Itoa(port)}
		if labels != "" {
			args = append(args, "--node-labels", labels)
		}
		tg, r, _ := statusTugOn(t, node, func(tg *tug) { tg.relay(reg.Addr) }, args...)
		return &waveDevice{node: node, tg: tg, r: r, port: port}
	}
	canary, half, rest := start("wave-canary", "ring=canary"), start(in, "ring=prod"), start(out, "ring=prod")
	devices := []*waveDevice{canary, half, rest}
	version := func(d *waveDevice, v uint64, what string) {
		d.tg.waitURLManifest(startTimeout, name, what, func(m *podview.ManifestStatus) error {
			if m.Version != v {
				return fmt.Errorf("version %d applied", m.Version)
			}
			return nil
		})
	}
	for _, d := range devices {
		version(d, 1, "version 1 applied")
	}

	// Version 2: three waves, the first 15 s from now.
	t0 := time.Now().UTC().Truncate(time.Second).Add(15 * time.Second)
	opens := map[*waveDevice]time.Time{canary: t0, half: t0.Add(20 * time.Second), rest: t0.Add(40 * time.Second)}
	index := map[*waveDevice]int{canary: 1, half: 2, rest: 3}
	bundlePush(t, "--key", key, "--version", "2", "--rollout-start", t0.Format(time.RFC3339),
		"--wave", "name=canary,labels=ring=canary", "--wave", "name=half,share=50,after=20s", "--wave", "name=all,after=40s", v2, ref)
	for _, d := range devices {
		d.tg.waitURLManifest(ociApplyTimeout+fetchTimeout, name, "version 2 waiting for its wave, its images pulled", func(m *podview.ManifestStatus) error {
			w := m.UpdateWaiting
			switch {
			case m.Version != 1:
				return fmt.Errorf("%w: version %d applied before its wave", errStop, m.Version)
			case w == nil || w.Version != 2:
				return fmt.Errorf("waiting %+v", w)
			case w.WaveIndex != index[d] || !w.WaveOpens.Equal(opens[d]):
				return fmt.Errorf("%w: wave %d at %s, want %d at %s", errStop, w.WaveIndex, w.WaveOpens, index[d], opens[d])
			case !w.Prefetched:
				return errors.New("its images are not pulled ahead")
			}
			return nil
		})
	}
	if time.Now().After(t0) {
		t.Fatalf("the checks of the waiting devices ended after the first wave opened (%s)", t0)
	}
	want := fmt.Sprintf(`update waiting for wave 2 "half" at %s`, opens[half].In(time.Local).Format("2006-01-02 15:04:05 MST"))
	if got := half.tg.cli("pods"); !strings.Contains(got, want) {
		t.Errorf("tug pods on %s:\n%s\nwant %q", half.node, got, want)
	}
	if got := half.tg.cli("describe", "fleet"); !strings.Contains(got, want) {
		t.Errorf("tug describe on %s:\n%s\nwant %q", half.node, got, want)
	}
	mf, _ := half.tg.scrape(half.port)
	if s := series(mf, "tug_bundle_rollout_state", map[string]string{"source": name, "state": "waiting"}); len(s) != 1 || value(s[0]) != 1 {
		t.Errorf("tug_bundle_rollout_state{state=waiting} = %v, want 1", s)
	}
	if s := series(mf, "tug_bundle_wave_opens_timestamp_seconds", map[string]string{"source": name}); len(s) != 1 || value(s[0]) != float64(opens[half].Unix()) {
		t.Errorf("tug_bundle_wave_opens_timestamp_seconds = %v, want %d", s, opens[half].Unix())
	}
	rest.r.waitDoc(rest.tg, fetchTimeout, 0, "version 2 waiting for wave 3", func(d statusreport.Document) error {
		w := waveOf(d)
		if w == nil || w.State != "waiting" || w.Version != 2 || w.Index != 3 || w.Name != "all" || !w.WaveOpens.Equal(opens[rest]) {
			return fmt.Errorf("wave %+v", w)
		}
		return nil
	})

	// Each applies in its wave, never before it opens.
	applied := map[*waveDevice]time.Time{}
	waitFor(t, time.Until(opens[rest])+startTimeout, "every device on version 2", func() (bool, error) {
		for _, d := range devices {
			if _, ok := applied[d]; ok {
				continue
			}
			m, err := d.tg.urlManifest(name)
			if err != nil {
				return false, err
			}
			if m.Version == 2 {
				applied[d] = time.Now()
				if applied[d].Before(opens[d]) {
					return false, fmt.Errorf("%w: %s applied version 2 at %s, before its wave opened at %s", errStop, d.node, applied[d], opens[d])
				}
			}
		}
		return len(applied) == len(devices), fmt.Errorf("applied: %d of %d", len(applied), len(devices))
	})
	for _, d := range devices {
		t.Logf("%s: wave %d opened %s, version 2 seen applied %s later", d.node, index[d], opens[d].Format(time.TimeOnly), applied[d].Sub(opens[d]).Round(time.Millisecond))
		d.r.waitDoc(d.tg, fetchTimeout, 0, "version 2 applied in its wave", func(doc statusreport.Document) error {
			if w := waveOf(doc); w == nil || w.State != "applied" || w.Version != 2 || w.Index != index[d] {
				return fmt.Errorf("wave %+v", w)
			}
			return nil
		})
	}

	// Version 3 crashes in wave 1; waves 2 and 3 open 60 s and 80 s after
	// its start.
	t1 := time.Now().UTC().Truncate(time.Second).Add(10 * time.Second)
	bundlePush(t, "--key", key, "--version", "3", "--rollout-start", t1.Format(time.RFC3339),
		"--wave", "name=canary,labels=ring=canary", "--wave", "name=half,share=50,after=60s", "--wave", "name=all,after=80s", v3, ref)
	canary.r.waitDoc(canary.tg, time.Until(t1)+startTimeout, 0, "version 3 applied in wave 1 and crashing", func(d statusreport.Document) error {
		w := waveOf(d)
		if w == nil || w.Version != 3 || (w.State != "applied" && w.State != "rolled_back") {
			return fmt.Errorf("wave %+v", w)
		}
		p, err := reportedPodOn(d, "fleet")
		if err != nil {
			return err
		}
		if p.Restarts == 0 {
			return fmt.Errorf("pod %+v has not restarted", p)
		}
		return nil
	})
	for _, d := range []*waveDevice{half, rest} {
		d.r.waitDoc(d.tg, fetchTimeout, 0, "version 3 waiting", func(doc statusreport.Document) error {
			if w := waveOf(doc); w == nil || w.State != "waiting" || w.Version != 3 {
				return fmt.Errorf("wave %+v", w)
			}
			return nil
		})
	}

	// The fleet's loop: the status documents as a receiver keeps them, one
	// per device, judged by the example script, which publishes the halt.
	docs := filepath.Join(dir, "docs")
	if err := os.Mkdir(docs, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range devices {
		got, _ := d.r.since(0)
		if len(got) == 0 {
			t.Fatalf("%s: no status document", d.node)
		}
		b, err := json.Marshal(got[len(got)-1].doc)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, docs, d.node+".json", string(b))
	}
	cmd := exec.Command("bash", repoPath(t, "scripts/fleet-halt.sh"), docs, "3", "90", "--key", key, "--version", "4", v2, ref)
	cmd.Env = append(os.Environ(), "TUG="+tugBin)
	script, err := cmd.CombinedOutput()
	t.Logf("scripts/fleet-halt.sh:\n%s", script)
	if err != nil || !strings.Contains(string(script), "wave 1: 0 of 1 devices healthy") || !strings.Contains(string(script), "halting the rollout") ||
		!strings.Contains(string(script), "(version 4, ") {
		t.Fatalf("scripts/fleet-halt.sh: %v: it did not publish the halt", err)
	}

	for _, d := range []*waveDevice{half, rest} {
		d.r.waitDoc(d.tg, ociApplyTimeout+fetchTimeout, 0, "version 3 halted", func(doc statusreport.Document) error {
			w := waveOf(doc)
			if w == nil || w.State != "halted" || w.Version != 3 || !strings.Contains(w.Reason, "before it was applied here: keeping version 2") {
				return fmt.Errorf("wave %+v", w)
			}
			return nil
		})
	}
	if wait := time.Until(t1.Add(90 * time.Second)); wait > 0 {
		t.Logf("waiting %s, past the opening of waves 2 and 3 of version 3", wait.Round(time.Second))
		time.Sleep(wait)
	}
	for _, d := range devices {
		m, err := d.tg.urlManifest(name)
		if err != nil {
			t.Fatal(err)
		}
		wantVersion := uint64(2)
		if d == canary {
			wantVersion = 3
		}
		if m.Version != wantVersion || m.UpdateWaiting != nil || m.Wave == nil {
			t.Errorf("%s after waves 2 and 3 of version 3: version %d applied (want %d), waiting %+v, wave %+v", d.node, m.Version, wantVersion, m.UpdateWaiting, m.Wave)
			continue
		}
		t.Logf("%s: %s: %s", d.node, m.Wave.State, m.Wave.Reason)
		if d != canary && m.Wave.State != "halted" {
			t.Errorf("%s: state %s, want halted", d.node, m.Wave.State)
		}
		if d == canary && m.Wave.State != "halted" && m.Wave.State != "rolled_back" {
			t.Errorf("%s: state %s, want halted or rolled_back", d.node, m.Wave.State)
		}
	}

	// The fleet sends wave 1 back too: a halt with revert, with version 2's
	// manifests. The canary applies them at once; the others keep version 2.
	bundlePush(t, "--key", key, "--version", "5", "--halt", "3", "--revert", v2, ref)
	canary.r.waitDoc(canary.tg, ociApplyTimeout+startTimeout, 0, "the canary reverted, version 2's pod ready", func(d statusreport.Document) error {
		w := waveOf(d)
		if w == nil || w.State != "halted" || w.Version != 3 || !strings.Contains(w.Reason, "halted with revert by version 5") {
			return fmt.Errorf("wave %+v", w)
		}
		if p, err := reportedPodOn(d, "fleet"); err != nil || !p.Ready {
			return fmt.Errorf("pod %+v, %v", p, err)
		}
		return nil
	})
	if m, err := canary.tg.urlManifest(name); err != nil || m.Version != 5 {
		t.Errorf("canary after the revert: version %d applied, %v; want 5", m.Version, err)
	}
	for _, d := range []*waveDevice{half, rest} {
		d.r.waitDoc(d.tg, ociApplyTimeout+fetchTimeout, 0, "the revert not applied", func(doc statusreport.Document) error {
			if w := waveOf(doc); w == nil || w.State != "halted" || w.Reason != "version 3 halted by version 5 before it was applied here: keeping version 2" {
				return fmt.Errorf("wave %+v", w)
			}
			return nil
		})
		if m, err := d.tg.urlManifest(name); err != nil || m.Version != 2 {
			t.Errorf("%s after the revert: version %d applied, %v; want 2", d.node, m.Version, err)
		}
	}

	mf, _ = rest.tg.scrape(rest.port)
	if s := series(mf, "tug_bundle_rollout_state", map[string]string{"source": name, "state": "halted"}); len(s) != 1 || value(s[0]) != 1 {
		t.Errorf("tug_bundle_rollout_state{state=halted} = %v, want 1", s)
	}
	if s := series(mf, "tug_bundle_wave_opens_timestamp_seconds", map[string]string{"source": name}); len(s) != 1 || value(s[0]) != 0 {
		t.Errorf("tug_bundle_wave_opens_timestamp_seconds = %v, want 0 when halted", s)
	}
}

// reportedPodOn returns the pod named name on the document's node (its
// static name has the node's name).
func reportedPodOn(d statusreport.Document, name string) (statusreport.Pod, error) {
	for _, p := range d.Pods {
		if p.Name == name+"-"+d.Node.Name {
			return p, nil
		}
	}
	return statusreport.Pod{}, fmt.Errorf("no pod %s-%s in %d pods", name, d.Node.Name, len(d.Pods))
}
