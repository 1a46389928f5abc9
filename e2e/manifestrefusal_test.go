//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"tug/internal/bundle"
	"tug/internal/podview"
	"tug/internal/registry"
	"tug/internal/statusreport"
)

// escapesManifest is a pod whose keys spell terminal control sequences:
// an OSC that sets the window title (ESC ] 0 ; ... BEL) on line 10, a CSI
// colour (ESC [ 31 m) and a C1 CSI (U+009B) as map keys.
func escapesManifest(image string) string {
	return `apiVersion: v1
kind: Pod
metadata:
  name: escapes
  labels:
    "\e[31mred": [1]
  annotations:
    "\u009b2J": {a: b}
spec:
  "\e]0;pwned\ax": 1
  containers:
  - name: main
    image: ` + image + `
`
}

// escapedPaths are the paths of escapesManifest's errors as tug writes them.
var escapedPaths = []string{`spec.\x1b]0;pwned\ax: unknown field`, `metadata.labels[\x1b[31mred]`, `metadata.annotations[\u009b2J]`}

// controlBytes returns the control characters in s a terminal acts on
// (C0 but newline and tab, DEL, C1) and the bytes that are not UTF-8, as
// escapes, or "" when there is none.
func controlBytes(s string) string {
	var found []string
	for i, r := range s {
		switch {
		case r == utf8.RuneError:
			found = append(found, fmt.Sprintf("%#x at %d", s[i], i))
		case r == '\n' || r == '\t':
		case unicode.IsControl(r):
			found = append(found, fmt.Sprintf("%U at %d", r, i))
		}
	}
	return strings.Join(found, ", ")
}

// assertEscaped checks that out, what a command printed, holds no control
// byte and shows each escaped path.
func assertEscaped(t *testing.T, what, out string) {
	t.Helper()
	if c := controlBytes(out); c != "" {
		t.Errorf("%s prints control bytes (%s):\n%q", what, c, out)
	}
	for _, p := range escapedPaths {
		if !strings.Contains(out, p) {
			t.Errorf("%s does not show the path %s:\n%q", what, p, out)
		}
	}
}

// TestEscapedFieldPaths: keys of a manifest that spell terminal escape
// sequences are refused with their field paths escaped everywhere the
// refusal is printed: tug validate of the file, tug bundle pull of a
// bundle holding it in a registry, and, from a running tug's manifest
// directory, GET /manifests, tug pods and the status document; another
// pod of the directory runs.
func TestEscapedFieldPaths(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := writeFile(t, dir, "escapes.yaml", escapesManifest("busybox:1.36"))

	out, err := exec.Command(tugBin, "validate", file).CombinedOutput()
	if exitCode(err) != 1 {
		t.Errorf("tug validate %s = %v, want exit 1:\n%s", file, err, out)
	}
	assertEscaped(t, "tug validate", string(out))
	if want := file + ":10:3: spec."; !strings.Contains(string(out), want) {
		t.Errorf("tug validate does not point at line 10, column 3 (%s):\n%q", want, out)
	}

	// A bundle tug bundle push would refuse, pushed as a registry holds
	// whatever it is given.
	reg := startRegistry(t, registryOpts{})
	ref := reg.Ref("tug/escapes:v1")
	a, err := bundle.BuildArtifact([]byte(escapesManifest("busybox:1.36")), "escapes.yaml", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	resolver := registry.New(registry.Config{HostsDir: t.TempDir()}).Resolver(ctx, nil, nil)
	if err := bundle.PushArtifact(ctx, resolver, ref, a); err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command(tugBin, "bundle", "pull", ref).CombinedOutput()
	if exitCode(err) != 1 || !strings.Contains(string(out), "refused") {
		t.Errorf("tug bundle pull %s = %v, want exit 1 and a refusal:\n%s", ref, err, out)
	}
	assertEscaped(t, "tug bundle pull", string(out))

	tg, recv, _ := statusTug(t)
	tg.writeManifest("good.yaml", shPod("good", tg.image, idle))
	tg.writeManifest("escapes.yaml", escapesManifest(tg.image))
	tg.waitRunning(startTimeout, "good", "main", 0)
	path := tg.manifestPath("escapes.yaml")
	m := tg.waitFileManifest(startTimeout, path, "escapes.yaml refused", func(m *podview.ManifestStatus) error {
		if m.Error == "" {
			return fmt.Errorf("no error")
		}
		return nil
	})
	assertEscaped(t, "GET /manifests", m.Error)
	pods, stderr, code := tg.runCLI("pods")
	if code != 0 {
		t.Fatalf("tug pods exited %d: %s", code, stderr)
	}
	assertEscaped(t, "tug pods", pods)
	if rows, _, err := parsePodTable(pods); err != nil || rows["escapes.yaml"]["STATUS"] != "ManifestError" {
		t.Errorf("tug pods has no ManifestError row of escapes.yaml (%v):\n%s", err, pods)
	}
	recv.waitDoc(tg, startTimeout, 0, "the refusal of escapes.yaml", func(d statusreport.Document) error {
		for _, s := range d.Sources {
			for _, f := range s.Files {
				if f.File == path && f.Error != "" {
					assertEscaped(t, "the status document", f.Error)
					return nil
				}
			}
		}
		return fmt.Errorf("no error of %s", path)
	})
}

// TestInvalidImageName: an image reference the reference grammar does not
// read (a placeholder left in a copied manifest) is refused when tug reads
// the file, with the kubelet's InvalidImageName and the file, line and
// field, in GET /manifests and tug pods, while the pod of another file in
// the directory keeps running; tug validate refuses it the same way.
func TestInvalidImageName(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	tg.writeManifest("good.yaml", shPod("good", tg.image, idle))
	first := tg.waitRunning(startTimeout, "good", "main", 0)
	tg.writeManifest("placeholder.yaml", shPod("placeholder", "<your_username>/app:v1", idle))
	path := tg.manifestPath("placeholder.yaml")
	want := path + `:9:14: spec.containers[0].image: InvalidImageName: couldn't parse image name "<your_username>/app:v1": invalid reference format`
	tg.waitFileManifest(startTimeout, path, "placeholder.yaml refused", func(m *podview.ManifestStatus) error {
		if m.Error != want {
			return fmt.Errorf("error %q, want %q", m.Error, want)
		}
		if len(m.UIDs) != 0 {
			return fmt.Errorf("applied pods %v", m.UIDs)
		}
		return nil
	})
	rows, rest, err := tg.podTable()
	if err != nil {
		t.Fatal(err)
	}
	if rows["placeholder.yaml"]["STATUS"] != "ManifestError" || !slicesContainPrefix(rest, want) {
		t.Errorf("tug pods: row %v and below the table %q, want a ManifestError row and %s", rows["placeholder.yaml"], rest, want)
	}
	if _, ok := rows[staticName("placeholder")]; ok {
		t.Errorf("tug pods lists a pod of the refused file: %v", rows)
	}
	if cs, err := tg.podContainers(tg.uid("placeholder")); err != nil || len(cs) != 0 {
		t.Errorf("the refused pod has containers: %v, %v", cs, err)
	}
	c, ok, err := tg.container(tg.uid("good"), "main")
	if err != nil || !ok || c.ID != first.ID || c.PID != first.PID {
		t.Errorf("the other file's pod changed: %v (found %v, %v), was %v", c, ok, err, first)
	}

	file := writeFile(t, t.TempDir(), "placeholder.yaml", shPod("placeholder", "<your_username>/app:v1", idle))
	out, err := exec.Command(tugBin, "validate", file).CombinedOutput()
	if exitCode(err) != 1 || !strings.Contains(string(out), file+`:9:14: spec.containers[0].image: InvalidImageName: couldn't parse image name "<your_username>/app:v1"`) {
		t.Errorf("tug validate %s = %v:\n%s\nwant exit 1 and InvalidImageName at 9:14", file, err, out)
	}
}

// fileManifest returns the /manifests item of the manifest file path.
func (tg *tug) fileManifest(path string) (podview.ManifestStatus, error) {
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	items, err := tg.api().Manifests(ctx)
	if err != nil {
		return podview.ManifestStatus{}, err
	}
	var files []string
	for _, m := range items {
		if m.File == path {
			return m, nil
		}
		files = append(files, m.File)
	}
	return podview.ManifestStatus{}, fmt.Errorf("GET /manifests has no item of file %s: %q", path, files)
}

// waitFileManifest waits until the /manifests item of the file path
// passes check and returns it.
func (tg *tug) waitFileManifest(timeout time.Duration, path, what string, check func(m *podview.ManifestStatus) error) podview.ManifestStatus {
	tg.t.Helper()
	var m podview.ManifestStatus
	tg.waitFor(timeout, "/manifests: "+what, func() (bool, error) {
		var err error
		if m, err = tg.fileManifest(path); err != nil {
			return false, err
		}
		return check(&m) == nil, check(&m)
	})
	return m
}
