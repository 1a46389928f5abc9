//go:build e2e

package e2e

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	containerd "github.com/containerd/containerd/v2/client"
)

func TestVolumes(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	hostDir := filepath.Join(tg.base, "host-data")
	if err := os.Mkdir(hostDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hostDir, "from-host.txt"), []byte("written-by-host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := strings.Join([]string{
		"cat /data/from-host.txt",
		"echo written-by-container > /data/from-container.txt",
		"grep ' /cache ' /proc/mounts",
		"echo x > /ro/ro-test.txt || echo ro-write-failed",
		idle,
	}, "; ")
	tg.writeManifest("vol.yaml", podYAML{name: "vol",
		containers: []ctrYAML{{name: "main", image: tg.image, script: script, mounts: []mountYAML{
			{name: "data", path: "/data"},
			{name: "data", path: "/ro", readOnly: true},
			{name: "cache", path: "/cache"},
		}}},
		volumes: []volYAML{hostPathVol("data", hostDir, "DirectoryOrCreate"), memoryVol("cache")},
	}.String())
	missing := filepath.Join(tg.base, "missing-file")
	tg.writeManifest("badpath.yaml", podYAML{name: "badpath",
		containers: []ctrYAML{{name: "main", image: tg.image, script: idle, mounts: []mountYAML{{name: "f", path: "/f"}}}},
		volumes:    []volYAML{hostPathVol("f", missing, "File")},
	}.String())

	tg.waitRunning(startTimeout, "vol", "main", 0)
	// stdout and stderr are separate pipes: their lines may reach the log
	// in either order, so wait for the stderr one too.
	lines := tg.waitLog(logTimeout, "vol", "main", 0, "written-by-host", "ro-write-failed", "sh: can't create /ro/ro-test.txt: Read-only file system")

	t.Run("container sees the host's file", func(t *testing.T) {
		if indexLine(lines, "stdout", "written-by-host") < 0 {
			t.Errorf("log = %q", lines)
		}
	})
	t.Run("host sees the container's file", func(t *testing.T) {
		data, err := os.ReadFile(filepath.Join(hostDir, "from-container.txt"))
		if err != nil || string(data) != "written-by-container\n" {
			t.Errorf("from-container.txt = %q, %v", data, err)
		}
	})
	t.Run("emptyDir Memory is a tmpfs", func(t *testing.T) {
		for _, l := range lines {
			if f := strings.Fields(l.Text); l.Stream == "stdout" && len(f) >= 3 && f[1] == "/cache" {
				if f[2] != "tmpfs" {
					t.Errorf("/cache is a %s: %q", f[2], l.Text)
				}
				return
			}
		}
		t.Errorf("no /cache line from /proc/mounts in the log: %q", lines)
	})
	t.Run("readOnly mount is read-only", func(t *testing.T) {
		ok := false
		for _, l := range lines {
			if l.Stream == "stderr" && strings.Contains(l.Text, "Read-only file system") {
				ok = true
			}
		}
		if !ok {
			t.Errorf("no 'Read-only file system' error on stderr: %q", lines)
		}
		if _, err := os.Stat(filepath.Join(hostDir, "ro-test.txt")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the write through the read-only mount reached the host: %v", err)
		}
	})
	t.Run("hostPath File missing", func(t *testing.T) {
		line := tg.waitForOutput(logTimeout, staticName("badpath"), missing)
		if !strings.Contains(line, "level=WARN") && !strings.Contains(line, "level=ERROR") {
			t.Errorf("the error is not logged as a warning or error: %s", line)
		}
		cs, err := tg.podContainers(tg.uid("badpath"))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			if c.Status == containerd.Running {
				t.Errorf("the pod started although its hostPath File is missing: %v", c)
			}
		}
		if _, err := os.Lstat(missing); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the missing hostPath was created: %v", err)
		}
	})
}
