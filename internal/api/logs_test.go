package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tug/internal/pod"
	"tug/internal/podlogs"
	"tug/internal/podview"
)

// logPod is a running pod with containers app and side and init container
// setup, whose logs are under dir.
func logPod(dir string) (*fakeStatus, string) {
	v := podView("default", "web-edge1", "web", "uid-web", pod.PhaseRunning)
	v.Spec.InitContainers = []pod.Container{{Name: "setup"}}
	v.Spec.Containers = []pod.Container{{Name: "app"}, {Name: "side"}}
	v.Status.ContainerStatuses = []pod.ContainerStatus{
		{Name: "app", State: pod.ContainerState{Running: &pod.StateRunning{}}},
		{Name: "side", State: pod.ContainerState{Running: &pod.StateRunning{}}},
	}
	one := podView("default", "one-edge1", "one", "uid-one", pod.PhaseRunning)
	one.Spec.Containers = []pod.Container{{Name: "main"}}
	return &fakeStatus{pods: []podview.View{v, one}}, filepath.Join(dir, "default_web-edge1_uid-web")
}

// criLines renders CRI records at times t0+i s: each text ending in "+"
// is a partial record (without the "+").
func criLines(t0 time.Time, texts ...string) string {
	var b strings.Builder
	for i, s := range texts {
		tag := "F"
		if strings.HasSuffix(s, "+") {
			tag, s = "P", strings.TrimSuffix(s, "+")
		}
		fmt.Fprintf(&b, "%s stdout %s %s\n", t0.Add(time.Duration(i)*time.Second).Format(time.RFC3339Nano), tag, s)
	}
	return b.String()
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestGetLog(t *testing.T) {
	logs := t.TempDir()
	st, podDir := logPod(logs)
	now := time.Now().UTC()
	old := now.Add(-time.Hour)
	app := filepath.Join(podDir, "app")
	writeFile(t, filepath.Join(app, "3.log.2"), criLines(old, "r2-a", "r2-b"))
	writeFile(t, filepath.Join(app, "3.log.1"), criLines(old.Add(time.Minute), "r1-a", "long+", "-joined"))
	writeFile(t, filepath.Join(app, "3.log"), criLines(now.Add(-5*time.Second), "cur-a", "cur-b"))
	writeFile(t, filepath.Join(app, "2.log"), criLines(old, "prev-a"))
	writeFile(t, filepath.Join(app, "notes.txt"), "not a log")
	writeFile(t, filepath.Join(logs, "default_one-edge1_uid-one", "main", "0.log"), criLines(now, "only"))
	s := &Server{Status: st, LogsDir: logs}
	h := s.Handler()

	tests := []struct {
		name  string
		query string
		code  int
		want  string
	}{
		{"all files of the current attempt, oldest first", "web/log?container=app", 200, "r2-a\nr2-b\nr1-a\nlong-joined\ncur-a\ncur-b\n"},
		{"by manifest name, the only container", "one/log", 200, "only\n"},
		{"previous", "web/log?container=app&previous=true", 200, "prev-a\n"},
		{"tail across files", "web/log?container=app&tailLines=3", 200, "long-joined\ncur-a\ncur-b\n"},
		{"tail 0", "web/log?container=app&tailLines=0", 200, ""},
		{"since", "web-edge1/log?container=app&sinceSeconds=60", 200, "cur-a\ncur-b\n"},
		{"timestamps", "one/log?timestamps=true", 200, now.Format(time.RFC3339Nano) + " only\n"},
		{"no container named", "web/log", 400, "a container name must be specified for pod web-edge1, choose one of: [app side] or one of the init containers: [setup]"},
		{"unknown container", "web/log?container=nope", 400, "container nope is not valid for pod web-edge1"},
		{"no previous", "one/log?previous=1", 400, `previous terminated container "main" in pod "one-edge1" not found`},
		{"not started", "web/log?container=side", 400, `container "side" in pod "web-edge1" is waiting to start`},
		{"bad tail", "one/log?tailLines=x", 400, `tailLines="x" is not a number of lines`},
		{"no pod", "nope/log", 404, `pod "nope" not found in namespace "default"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := serve(t, h, "/pods/default/"+tt.query)
			if rec.Code != tt.code {
				t.Fatalf("code %d, want %d: %s", rec.Code, tt.code, rec.Body)
			}
			got := rec.Body.String()
			if tt.code != 200 {
				var e errorBody
				if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error != tt.want {
					t.Fatalf("answer %s, want the error %q", got, tt.want)
				}
				return
			}
			if got != tt.want {
				t.Errorf("log\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

// TestLogsFollow: Client.Logs with Follow over a real unix socket prints
// what is written after it started, follows the file across a rotation
// (rename to .1, new file) and a truncation, and ends when a newer attempt
// starts.
func TestLogsFollow(t *testing.T) {
	logs := t.TempDir()
	st, podDir := logPod(logs)
	s := &Server{Status: st, LogsDir: logs}
	sock := filepath.Join(t.TempDir(), "tug.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: s.Handler()}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })

	path := filepath.Join(podDir, "side", "0.log")
	t0 := time.Now()
	writeFile(t, path, criLines(t0, "before"))
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- (&Client{SocketPath: sock}).Logs(context.Background(), "default", "web", LogOptions{Container: "side", Follow: true, TailLines: -1}, pw)
		pw.Close()
	}()
	out := make(chan string, 100)
	go func() {
		buf := make([]byte, 4096)
		var acc string
		for {
			n, err := pr.Read(buf)
			acc += string(buf[:n])
			for {
				line, rest, ok := strings.Cut(acc, "\n")
				if !ok {
					break
				}
				out <- line
				acc = rest
			}
			if err != nil {
				close(out)
				return
			}
		}
	}()
	expect := func(want ...string) {
		t.Helper()
		for _, w := range want {
			select {
			case got := <-out:
				if got != w {
					t.Fatalf("line %q, want %q", got, w)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("no line %q within 5s", w)
			}
		}
	}
	appendTo := func(p, data string) {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(data)
		f.Close()
	}
	expect("before")
	appendTo(path, criLines(t0, "after"))
	expect("after")
	// Rotation: the last lines of the old file, then the new file.
	appendTo(path, criLines(t0, "old-last"))
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	appendTo(path, criLines(t0, "new-first"))
	expect("old-last", "new-first")
	// Truncation in place.
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * podlogs.FollowPoll)
	appendTo(path, criLines(t0, "x"))
	expect("x")
	// A new attempt ends the follow.
	writeFile(t, filepath.Join(podDir, "side", "1.log"), "")
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("follow did not end when a new attempt started")
	}
	if extra, ok := <-out; ok {
		t.Errorf("extra line %q", extra)
	}
}

// fakeJournal serves each container ID's CRI records, as podlogs'
// JournalReader would give the journal's entries.
type fakeJournal map[string]string

func (j fakeJournal) Stream(_ context.Context, id string, sink podlogs.Sink, _ bool, _ func() bool) error {
	for _, line := range strings.Split(strings.TrimSuffix(j[id], "\n"), "\n") {
		if line == "" {
			continue
		}
		if err := sink.Record([]byte(line)); err != nil {
			return err
		}
	}
	return sink.EndOfFiles()
}

// TestGetLogJournal: with the journal as the logs' store, the current
// attempt is the container ID of the status, the previous one that of its
// last termination.
func TestGetLogJournal(t *testing.T) {
	st, _ := logPod(t.TempDir())
	st.pods[0].Status.ContainerStatuses[0].ContainerID = "containerd://app_1"
	st.pods[0].Status.ContainerStatuses[0].LastTerminationState.Terminated = &pod.StateTerminated{ContainerID: "containerd://app_0"}
	now := time.Now().UTC()
	s := &Server{Status: st, Journal: fakeJournal{
		"app_1": criLines(now, "cur-a", "long+", "-joined", "cur-b"),
		"app_0": criLines(now, "prev-a"),
	}}
	h := s.Handler()
	tests := []struct {
		name  string
		query string
		code  int
		want  string
	}{
		{"current", "web/log?container=app", 200, "cur-a\nlong-joined\ncur-b\n"},
		{"previous", "web/log?container=app&previous=true", 200, "prev-a\n"},
		{"tail", "web/log?container=app&tailLines=1", 200, "cur-b\n"},
		{"not started", "web/log?container=side", 400, ""},
		{"no previous", "web/log?container=side&previous=true", 400, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := serve(t, h, "/pods/default/"+tt.query)
			if rec.Code != tt.code {
				t.Fatalf("code %d, want %d: %s", rec.Code, tt.code, rec.Body)
			}
			if tt.code == 200 && rec.Body.String() != tt.want {
				t.Errorf("log\n%q\nwant\n%q", rec.Body.String(), tt.want)
			}
		})
	}
}
