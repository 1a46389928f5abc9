//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
)

func TestBrokenEditKeepsLastGood(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	good := func(script string) string {
		return shPod("keep", tg.image, script)
	}
	// The same pod with a typo on line 9, column 7.
	broken := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: keep
spec:
  terminationGracePeriodSeconds: 5
  containers:
    - name: main
      imagee: %[1]s
      image: %[1]s
      command: ["sh", "-c", %[2]s]
`, tg.image, q("echo broken; "+idle))

	tg.writeManifest("keep.yaml", good("echo v1; "+idle))
	c0 := tg.waitRunning(startTimeout, "keep", "main", 0)

	tg.writeManifest("keep.yaml", broken)
	// The error points at the typo: file, line, column and field path.
	line := tg.waitForOutput(logTimeout, tg.manifestPath("keep.yaml")+":9:7: ")
	if want := tg.manifestPath("keep.yaml") + ":9:7: spec.containers[0].imagee"; !strings.Contains(line, want) {
		t.Errorf("tug reported the broken file as\n  %s\nwant it to contain %q", line, want)
	}
	// Let a full rescan pass too: it must not drop the pod either.
	time.Sleep(tg.fileCheck + time.Second)
	c, ok, err := tg.container(tg.uid("keep"), "main")
	if err != nil || !ok {
		t.Fatalf("container of the pod: found %v, %v; %s", ok, err, tg.describe())
	}
	if c.ID != c0.ID || c.PID != c0.PID || c.Status != containerd.Running {
		t.Fatalf("a broken edit changed the pod: before %v, after %v", c0, c)
	}

	tg.writeManifest("keep.yaml", good("echo fixed; "+idle))
	tg.waitRunning(removeTimeout, "keep", "main", 1)
	tg.waitLog(logTimeout, "keep", "main", 1, "fixed")
}

func TestEditorLeftoversIgnored(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	leftovers := []string{"web.yaml~", ".web.yaml.swp", "#web.yaml#", "web.yaml.bak", "web.tmp", ".hidden.yaml", "sub/pod.yaml"}
	fileOf := map[string]string{} // pod UID -> file
	for i, f := range leftovers {
		name := fmt.Sprintf("leftover%d", i)
		fileOf[tg.uid(name)] = f
		tg.writeManifest(f, shPod(name, tg.image, idle))
	}
	tg.writeManifest("marker.yaml", shPod("marker", tg.image, idle))
	tg.waitRunning(startTimeout, "marker", "main", 0)

	onlyMarker := func(when string) {
		t.Helper()
		cs, err := tg.containers()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			if c.UID() != tg.uid("marker") {
				t.Errorf("%s: container %v, from file %q", when, c, fileOf[c.UID()])
			}
		}
	}
	onlyMarker("when marker runs")
	// A full rescan of the directory must ignore them as well.
	time.Sleep(tg.fileCheck + time.Second)
	onlyMarker("after a rescan")
}

func TestAtomicRenameAndSlowWrite(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// fileCheck is the rescan period: for the rename, longer than the
		// test, so that only inotify can explain a quick start; for the slow
		// write, short, so that rescans happen while the file is half
		// written.
		fileCheck time.Duration
		write     func(tg *tug, file, yaml string)
	}{
		{"rename", time.Hour, func(tg *tug, file, yaml string) { tg.writeManifest(file, yaml) }},
		{"slow write", 100 * time.Millisecond, slowWrite},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg := startTug(t, tugOpts{
				fileCheck: tt.fileCheck,
				beforeStart: func(tg *tug) {
					tg.writeManifest("ready.yaml", shPod("ready", tg.image, idle))
				},
			})
			// ready.yaml was there before tug started; once its pod runs,
			// the directory is watched.
			tg.waitRunning(startTimeout, "ready", "main", 0)

			// The line the pod prints is in the second half of the file.
			yaml := shPod("new", tg.image, "echo "+strings.Repeat("x", 40)+" complete; "+idle)
			tt.write(tg, "new.yaml", yaml)
			tg.waitRunning(10*time.Second, "new", "main", 0)
			tg.waitLog(logTimeout, "new", "main", 0, strings.Repeat("x", 40)+" complete")
			if lines := problemLines(tg.output(), tg.manifestPath("new.yaml")); len(lines) > 0 {
				t.Errorf("tug reported problems with the file it was given:\n%s", strings.Join(lines, "\n"))
			}
			c, _, err := tg.container(tg.uid("new"), "main")
			if err != nil || c.Attempt() != 0 {
				t.Errorf("the pod was started more than once: %v, %v; %s", c, err, tg.describe())
			}
		})
	}
}

// slowWrite writes a manifest in place, as an editor that does not rename
// would: open in the directory, half the bytes, a pause, the rest, close.
func slowWrite(tg *tug, file, yaml string) {
	tg.t.Helper()
	f, err := os.OpenFile(tg.manifestPath(file), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		tg.t.Fatal(err)
	}
	defer f.Close()
	half := len(yaml) / 2
	if _, err := f.WriteString(yaml[:half]); err != nil {
		tg.t.Fatal(err)
	}
	// The pause is the point: tug must not act on the half-written file.
	time.Sleep(500 * time.Millisecond)
	if _, err := f.WriteString(yaml[half:]); err != nil {
		tg.t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tg.t.Fatal(err)
	}
}

// problemLines returns the lines of tug's output that report a problem with
// file: a warning or an error naming it, or a "file:line" position in it.
func problemLines(out, file string) []string {
	pos := regexp.MustCompile(regexp.QuoteMeta(file) + `:\d`)
	var bad []string
	for line := range strings.Lines(out) {
		if !strings.Contains(line, file) {
			continue
		}
		if pos.MatchString(line) || strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			bad = append(bad, strings.TrimSuffix(line, "\n"))
		}
	}
	return bad
}
