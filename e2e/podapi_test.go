//go:build e2e

package e2e

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// Pod v1 fields of Kubernetes 1.33 to 1.37 on the real containerd: what a
// container sees of each.

// waitFileContent waits for the file at path to exist and returns its
// content. Test containers write the file under a temporary name and
// rename it in, so that it is read whole.
func waitFileContent(t *testing.T, path string) string {
	t.Helper()
	var content []byte
	waitFor(t, startTimeout, "file "+filepath.Base(path), func() (bool, error) {
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return false, err
		}
		if err != nil {
			return false, errors.Join(errStop, err)
		}
		content = b
		return true, nil
	})
	return string(content)
}

// TestEmptyDirMode: emptyDir.mode gives the volume's directory its
// permission bits, the sticky bit included, on disk and on tmpfs, as the
// container sees them; without it the directory is 0777.
func TestEmptyDirMode(t *testing.T) {
	tg := startTug(t, tugOpts{})
	out := t.TempDir()
	tg.writeManifest("modes.yaml", podYAML{
		name: "modes",
		containers: []ctrYAML{{
			name: "main", image: tg.image,
			script: "stat -c %a /disk /mem /plain > /out/modes.tmp && mv /out/modes.tmp /out/modes; sleep 3600",
			mounts: []mountYAML{{name: "disk", path: "/disk"}, {name: "mem", path: "/mem"}, {name: "plain", path: "/plain"}, {name: "out", path: "/out"}},
		}},
		volumes: []volYAML{
			{"disk", "emptyDir: {mode: 01777}"},
			{"mem", "emptyDir: {medium: Memory, mode: 0750}"},
			emptyVol("plain"),
			hostPathVol("out", out, "Directory"),
		},
	}.String())
	if got, want := waitFileContent(t, filepath.Join(out, "modes")), "1777\n750\n777\n"; got != want {
		t.Errorf("stat -c %%a of /disk, /mem, /plain = %q, want %q", got, want)
	}
	tg.removePods("modes")
}
