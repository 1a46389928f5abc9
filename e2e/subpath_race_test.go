//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// raceDuration is how long TestSubPathSymlinkRace races.
const raceDuration = 60 * time.Second

// TestSubPathSymlinkRace is the kubelet's CVE-2017-1002101 against tug: one
// container of a pod swaps a directory of a shared emptyDir for a symlink
// (to the host's / and to a host directory holding a marker) and back as
// fast as it can, while the other container mounts that directory as its
// subPath and is restarted about every second (it exits, restartPolicy
// Always with a short back-off). However the race falls, the subPath mount
// must never show anything but the (empty) directory of the volume, a
// start that meets the symlink must fail with a clear error, and no staging
// mount may be left behind. Whether a start meets the symlink during the
// race is luck (most meet a directory or nothing), so after the race the
// racer leaves d a symlink for good and the next start must be refused.
func TestSubPathSymlinkRace(t *testing.T) {
	tg := startTug(t, tugOpts{args: []string{
		"--crash-loop-back-off-initial", "100ms", "--crash-loop-back-off-max", "200ms",
	}})
	secret := filepath.Join(tg.base, "host-secret")
	if err := os.Mkdir(secret, 0o755); err != nil {
		t.Fatal(err)
	}
	marker := "marker-only-on-the-host"
	if err := os.WriteFile(filepath.Join(secret, marker), []byte("host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The racer swaps d for a symlink as fast as it can for about two
	// seconds (a thousand rounds: 1.6 s on an idle 2-core machine), then
	// leaves it a directory for two, so that the victim's starts do not
	// all fail (tug retries a failing sync with a growing delay) and the
	// race is tried many times. rm -rf: tug may have made d a directory
	// while it was gone (mkdirat of a missing subPath), and ln then puts
	// its symlink inside d. Once the test writes /vol/stop, d becomes a
	// symlink to / for good.
	racer := fmt.Sprintf(`cd /vol
while [ ! -e stop ]; do
  i=0
  while [ $i -lt 1000 ]; do
    mkdir d; rm -rf d; ln -s / d; rm -f d; mkdir d; rm -rf d; ln -s %s d; rm -f d
    i=$((i+1))
  done
  mkdir d; sleep 2; rm -rf d
done
until [ -L d ]; do rm -rf d; ln -s / d; done
exec sleep 3600`, secret)
	// The victim records every run in the report volume (its own log
	// files do not outlive two attempts), and what it saw if its subPath
	// mount held anything from outside the volume: the host's marker, or
	// anything but the symlinks the racer may have put inside d (the
	// volume's d is only ever empty or holds the racer's symlinks).
	victim := fmt.Sprintf(`if [ -e /sub/%s ] || [ -n "$(find /sub -mindepth 1 -maxdepth 1 ! -type l)" ]; then
  { date; ls -la /sub/ | head -20; grep ' /sub ' /proc/self/mountinfo; } >> /report/escaped
fi
echo run >> /report/runs
sleep 0.5`, marker)
	tg.writeManifest("race.yaml", podYAML{name: "race", grace: 1, restartPolicy: "Always",
		containers: []ctrYAML{
			{name: "racer", image: tg.image, script: racer, mounts: []mountYAML{{name: "vol", path: "/vol"}}},
			{name: "victim", image: tg.image, script: victim, mounts: []mountYAML{
				{name: "vol", path: "/sub", subPath: "d"},
				{name: "report", path: "/report"},
			}},
		},
		volumes: []volYAML{emptyVol("vol"), emptyVol("report")},
	}.String())
	tg.waitRunning(startTimeout, "race", "racer", 0)

	report := tg.emptyDir("race", "report")
	staging := filepath.Join(tg.rootDir, "pods", tg.uid("race"), "volume-subpaths")
	maxStaged := 0
	for end := time.Now().Add(raceDuration); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if b, err := os.ReadFile(filepath.Join(report, "escaped")); err == nil {
			t.Fatalf("the subPath mount showed what is outside its volume:\n%s", b)
		}
		ms, err := mountsUnder(staging)
		if err != nil {
			t.Fatal(err)
		}
		maxStaged = max(maxStaged, len(ms))
	}
	runs := 0
	if b, err := os.ReadFile(filepath.Join(report, "runs")); err == nil {
		runs = strings.Count(string(b), "run\n")
	}
	refused := strings.Count(tg.output(), "is a symlink")
	t.Logf("in %v: %d runs of the subPath container, %d starts refused on a symlink, at most %d staging mounts at once",
		raceDuration, runs, refused, maxStaged)
	if runs < 10 {
		t.Errorf("only %d runs of the subPath container in %v: the race was hardly tried", runs, raceDuration)
	}
	t.Run("a start that meets the symlink fails clearly", func(t *testing.T) {
		if err := os.WriteFile(filepath.Join(tg.emptyDir("race", "vol"), "stop"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		line := tg.waitForOutput(30*time.Second, "invalid subPath", `\"d\" is a symlink`)
		if !strings.Contains(line, "victim") {
			t.Errorf("the error does not name the container: %s", line)
		}
	})
	if b, err := os.ReadFile(filepath.Join(report, "escaped")); err == nil {
		t.Fatalf("the subPath mount showed what is outside its volume:\n%s", b)
	}
	if maxStaged > 1 {
		t.Errorf("%d staging mounts at once for one container starting", maxStaged)
	}

	t.Run("no staging mount is left", func(t *testing.T) {
		if err := os.Remove(tg.manifestPath("race.yaml")); err != nil {
			t.Fatal(err)
		}
		podDir := filepath.Join(tg.rootDir, "pods", tg.uid("race"))
		tg.waitFor(removeTimeout, "the race pod to be removed", func() (bool, error) {
			cs, err := tg.podContainers(tg.uid("race"))
			if err != nil || len(cs) > 0 {
				return false, err
			}
			_, err = os.Stat(podDir)
			return os.IsNotExist(err), nil
		})
		ms, err := mountsUnder(tg.rootDir)
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) != 0 {
			t.Errorf("mounts left under the root dir: %v", ms)
		}
	})
}
