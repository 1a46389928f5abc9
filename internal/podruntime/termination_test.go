package podruntime

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tug/internal/pod"
	"tug/internal/volume"
)

func testRuntime(t *testing.T) *Runtime {
	t.Helper()
	dir := t.TempDir()
	cfg := Config{RootDir: filepath.Join(dir, "root"), LogsDir: filepath.Join(dir, "logs")}
	return &Runtime{cfg: cfg, log: slog.New(slog.DiscardHandler), volumes: volume.New(volume.Config{RootDir: cfg.RootDir})}
}

// TestCleanupPod: the pod's state and its log directory are removed, and a
// second cleanup finds nothing to do.
func TestCleanupPod(t *testing.T) {
	r := testRuntime(t)
	p := &pod.Pod{Metadata: pod.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"}}
	if _, err := r.PreparePod(context.Background(), p, pod.Sandbox{IP: "10.244.0.7"}); err != nil {
		t.Fatal(err)
	}
	logDir := r.podLogDir(p)
	if err := os.MkdirAll(filepath.Join(logDir, "app"), 0o755); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := r.CleanupPod(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{filepath.Join(r.cfg.RootDir, "pods", "u1"), logDir} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s still there: %v", d, err)
		}
	}
}

func TestTerminationMessage(t *testing.T) {
	r := testRuntime(t)
	root := r.cfg.RootDir
	p := &pod.Pod{Metadata: pod.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"}}
	tests := []struct {
		name    string
		c       pod.Container
		written string // what the container writes to its message file
		log     string // its log file
		exit    int
		want    string
	}{
		{"file", pod.Container{Name: "a", TerminationMessagePath: "/dev/termination-log"}, "done: 3 rows", "", 0, "done: 3 rows"},
		{"no path, no message", pod.Container{Name: "b"}, "", "", 1, ""},
		{"fallback to the log on error", pod.Container{Name: "c", TerminationMessagePolicy: "FallbackToLogsOnError"}, "", "2026-01-01T00:00:00Z stderr F boom\n2026-01-01T00:00:01Z stderr P par\n2026-01-01T00:00:01Z stderr F tial\n", 2, "boom\npartial\n"},
		{"no fallback on success", pod.Container{Name: "d", TerminationMessagePolicy: "FallbackToLogsOnError"}, "", "2026-01-01T00:00:00Z stdout F fine\n", 0, ""},
		{"the file wins over the log", pod.Container{Name: "e", TerminationMessagePath: "/tmp/msg", TerminationMessagePolicy: "FallbackToLogsOnError"}, "bad config", "2026-01-01T00:00:00Z stderr F noise\n", 1, "bad config"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := "ctr-" + tt.c.Name
			m, err := r.volumes.TerminationMount(p, &tt.c, id, r.podLogDir(p))
			if err != nil {
				t.Fatal(err)
			}
			if (m != nil) != (tt.c.TerminationMessagePath != "") {
				t.Fatalf("mount %v for path %q", m, tt.c.TerminationMessagePath)
			}
			if m != nil {
				if m.Destination != tt.c.TerminationMessagePath {
					t.Errorf("mounted at %s", m.Destination)
				}
				if st, err := os.Stat(m.Source); err != nil || st.Mode().Perm() != 0o666 {
					t.Errorf("message file %v mode %v, want 0666", err, st.Mode())
				}
				if err := os.WriteFile(m.Source, []byte(tt.written), 0o666); err != nil {
					t.Fatal(err)
				}
			}
			if tt.log != "" {
				lp := r.ContainerLogPath(p, tt.c.Name, 0)
				if err := os.MkdirAll(filepath.Dir(lp), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(lp, []byte(tt.log), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			rc := &pod.RuntimeContainer{ID: id, PodUID: "u1", Name: tt.c.Name, ExitCode: tt.exit}
			if got := r.terminationMessage(rc); got != tt.want {
				t.Errorf("message %q, want %q", got, tt.want)
			}
		})
	}
	long := strings.Repeat("x", 10000)
	if err := os.WriteFile(filepath.Join(root, "pods", "u1", "termination", "ctr-a"), []byte(long), 0o666); err != nil {
		t.Fatal(err)
	}
	if got := r.terminationMessage(&pod.RuntimeContainer{ID: "ctr-a", PodUID: "u1"}); len(got) != 4096 {
		t.Errorf("message of %d bytes, want it cut to the kubelet's 4096", len(got))
	}
}
