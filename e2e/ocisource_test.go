//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tug/internal/pod"
	"tug/internal/podview"
	"tug/internal/source"
	"tug/internal/testutil"
)

// ociCheck is --oci-check-frequency in these tests.
const ociCheck = 2 * time.Second

// ociApplyTimeout bounds how long a new tag digest takes to be applied:
// two polls (with their 10% jitter) and slack for a loaded machine.
const ociApplyTimeout = 2*ociCheck*11/10 + 3*time.Second

// bundlePush runs "tug bundle push args..." on the host (which reaches the
// test's registry on its loopback) and returns the pushed manifest's
// digest.
func bundlePush(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(tugBin, append([]string{"bundle", "push"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("tug bundle push %v: %v\n%s", args, err, out)
	}
	_, after, ok := strings.Cut(strings.TrimSpace(string(out)), "@")
	dgst, _, _ := strings.Cut(after, " ")
	if !ok || !strings.HasPrefix(dgst, "sha256:") {
		t.Fatalf("tug bundle push printed no digest: %s", out)
	}
	return dgst
}

// ociUnchangedPolls is tug_manifest_oci_unchanged_polls_total of the
// source named name: the polls whose HEAD found the applied (or refused)
// digest.
func (tg *tug) ociUnchangedPolls(port int, name string) float64 {
	tg.t.Helper()
	mf, _ := tg.scrape(port)
	s := series(mf, "tug_manifest_oci_unchanged_polls_total", map[string]string{"source": name})
	if len(s) != 1 {
		tg.t.Fatalf("/metrics: %d series of tug_manifest_oci_unchanged_polls_total{source=%q}, want 1", len(s), name)
	}
	return s[0].GetCounter().GetValue()
}

// exitCode is a command's exit code from its error (0 for nil, -1 when it
// did not run).
func exitCode(err error) int {
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.ExitCode()
	}
	return -1
}

// writeFile writes content to dir/name and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	must(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

// tamperLayer rewrites, in the registry's storage, the bundle layer of the
// artifact dgst of repo: same size, other bytes (old replaced by new), so
// that the registry serves bytes that do not match the layer's digest.
func tamperLayer(t *testing.T, r *testRegistry, repo, dgst, old, new string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+r.Addr+"/v2/"+repo+"/manifests/"+dgst, nil)
	req.Header.Set("Accept", "application/vnd.oci.image.manifest.v1+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m struct {
		Layers []struct{ Digest string } `json:"layers"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || len(m.Layers) != 1 {
		t.Fatalf("manifest %s: %v %+v", dgst, err, m)
	}
	hex := strings.TrimPrefix(m.Layers[0].Digest, "sha256:")
	data := filepath.Join(r.Dir, "docker/registry/v2/blobs/sha256", hex[:2], hex, "data")
	b, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(old) != len(new) || !bytes.Contains(b, []byte(old)) {
		t.Fatalf("layer %s has no %q to replace by %q", hex, old, new)
	}
	must(t, os.WriteFile(data, bytes.Replace(b, []byte(old), []byte(new), 1), 0o644))
}

// TestOCISource: tug runs a signed bundle pushed by "tug bundle push" to a
// registry; a new digest of the tag is applied by the next poll; a
// tampered, an unsigned and a wrongly signed artifact are refused with the
// pods untouched and the error in /manifests; with the registry down at
// boot, the checkpointed bundle runs.
func TestOCISource(t *testing.T) {
	t.Parallel()
	image, _ := testutil.TestImage(t)
	reg := startRegistry(t, registryOpts{})
	dir := t.TempDir()
	_, pub := keyPair(t, dir, "k")
	key := filepath.Join(dir, "k.pem")
	keyPair(t, dir, "other")
	otherKey := filepath.Join(dir, "other.pem")
	ref := reg.Ref("tug/bundle:prod")
	name := source.OCIPrefix + ref
	uid := pod.UID(name, "default", staticName("oci"))

	v1 := writeFile(t, dir, "v1.yaml", shPod("oci", image, "echo v1; "+idle))
	d1 := bundlePush(t, "--key", key, "--version", "1", v1, ref)
	port := freePort(t)
	tg := startTug(t, tugOpts{
		args:        []string{"--manifest-oci", ref, "--oci-check-frequency", ociCheck.String(), "--manifest-verify-key", pub},
		beforeStart: func(tg *tug) { tg.relay(reg.Addr) },
		healthzPort: port,
	})
	tg.waitRunningUID(startTimeout, uid, "main", 0)
	tg.waitURLManifest(ociApplyTimeout, name, "the v1 artifact applied", func(m *podview.ManifestStatus) error {
		if m.Fetch == nil || m.Fetch.Digest != d1 || m.Version != 1 || manifestError(m) != "" {
			return fmt.Errorf("not v1 %s", d1)
		}
		return nil
	})
	want := tg.tasksOf(uid)

	for _, c := range []struct {
		name, word string
		push       func() string
	}{
		{"tampered layer", "digest", func() string {
			d := bundlePush(t, "--key", key, "--version", "2", writeFile(t, dir, "t.yaml", shPod("oci", image, "echo t2; "+idle)), ref)
			tamperLayer(t, reg, "tug/bundle", d, "echo t2", "echo x2")
			return d
		}},
		{"unsigned", "signed", func() string {
			return bundlePush(t, "--unsigned", writeFile(t, dir, "u.yaml", shPod("oci", image, "echo u2; "+idle)), ref)
		}},
		{"signed by another key", "signature", func() string {
			return bundlePush(t, "--key", otherKey, "--version", "2", writeFile(t, dir, "o.yaml", shPod("oci", image, "echo o2; "+idle)), ref)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tg := tg.forTest(t)
			d := c.push()
			m := tg.waitURLManifest(ociApplyTimeout, name, "the artifact refused", func(m *podview.ManifestStatus) error {
				if !strings.Contains(manifestError(m), d) {
					return fmt.Errorf("no error about %s", d)
				}
				return nil
			})
			msg := manifestError(&m)
			t.Logf("error shown: %s", msg)
			if !strings.Contains(strings.ToLower(msg), c.word) {
				t.Errorf("the error %q does not say %q", msg, c.word)
			}
			if m.Fetch.Digest != d1 || m.AppliedHash == "" {
				t.Errorf("applied digest %s, want v1's %s kept", m.Fetch.Digest, d1)
			}
			time.Sleep(2 * ociCheck)
			if err := tg.sameTasks(want); err != nil {
				t.Errorf("%s artifact changed the pod: %v", c.name, err)
			}
		})
	}

	// A good new digest is applied by the first poll after its push: no
	// poll that finds the tag unchanged comes between them (one may: a
	// poll whose HEAD was answered while the push was finishing).
	v2 := writeFile(t, dir, "v2.yaml", shPod("oci", image, "echo v2; "+idle))
	d2 := bundlePush(t, "--key", key, "--version", "2", v2, ref)
	pushed := time.Now()
	unchangedBefore := tg.ociUnchangedPolls(port, name)
	tg.waitURLManifest(ociApplyTimeout, name, "the v2 artifact applied", func(m *podview.ManifestStatus) error {
		if m.Fetch == nil || m.Fetch.Digest != d2 || m.Version != 2 || manifestError(m) != "" {
			return fmt.Errorf("not v2 %s", d2)
		}
		return nil
	})
	unchanged := tg.ociUnchangedPolls(port, name) - unchangedBefore
	t.Logf("v2 applied %v after its push, %v polls of the unchanged tag between", time.Since(pushed).Round(time.Millisecond), unchanged)
	if unchanged > 1 {
		t.Errorf("%v polls found the tag unchanged after the push of v2: the new digest was not applied by the next poll", unchanged)
	}
	running := tg.waitRunningUID(startTimeout, uid, "main", 1)
	for _, c := range []struct {
		key, want string
		code      int
	}{
		{pub, "would apply default/oci", 0},
		{filepath.Join(dir, "other.pub.pem"), "bad signature", 1},
	} {
		out, err := exec.Command(tugBin, "bundle", "pull", "--verify-key", c.key, "--node", hostname, ref).CombinedOutput()
		if code := exitCode(err); code != c.code || !strings.Contains(string(out), d2) || !strings.Contains(string(out), c.want) {
			t.Errorf("tug bundle pull --verify-key %s = %d (%v):\n%s\nwant %d, the digest %s and %q", c.key, code, err, out, c.code, d2, c.want)
		}
	}
	mf, _ := tg.scrape(port)
	if s := series(mf, "tug_manifest_oci_applied_info", map[string]string{"source": name, "digest": d2}); len(s) != 1 {
		t.Errorf("/metrics has no tug_manifest_oci_applied_info of %s: %v", d2, mf["tug_manifest_oci_applied_info"])
	}

	// The registry is down when tug starts: the checkpoint runs.
	if err := tg.Stop(); err != nil {
		t.Fatal(err)
	}
	reg.Stop()
	tg.Start()
	tg.waitURLManifest(startTimeout, name, "the checkpoint applied, the registry unreachable", func(m *podview.ManifestStatus) error {
		if m.Fetch == nil || m.Fetch.Digest != d2 || !m.Fetch.FromCheckpoint || m.Fetch.Error == "" {
			return fmt.Errorf("not the checkpoint of %s with an error", d2)
		}
		return nil
	})
	out, stderr, code := tg.runCLI("pods")
	if code != 0 || !strings.Contains(out, "OCI "+ref+": ") || !strings.Contains(out, "pods from the checkpoint") {
		t.Errorf("tug pods = %d:\n%s%s\nwant the OCI source's line, from the checkpoint", code, out, stderr)
	}
	time.Sleep(2 * ociCheck)
	if c := tg.waitRunningUID(startTimeout, uid, "main", 1); c.ID != running.ID || c.PID != running.PID {
		t.Errorf("after the restart: %v, want %v untouched", c, running)
	}
}
