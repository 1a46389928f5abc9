package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"tug/internal/pod"
	"tug/internal/podview"
	"tug/internal/testutil"
)

// fakeExecer runs "commands" in memory: "echo" writes out and err, copies
// stdin to stdout, and exits with 3; "size" prints the terminal's sizes
// once stdin ends; "missing" cannot be started; "hang" waits for ctx.
type fakeExecer struct {
	mu    sync.Mutex
	ids   []string
	cmds  [][]string
	ended chan error // what "hang" returned with
}

type fakeStartError struct{ code int }

func (e fakeStartError) Error() string { return fmt.Sprintf("cannot start (%d)", e.code) }
func (e fakeStartError) ExitCode() int { return e.code }

type fakeProc struct {
	mu    sync.Mutex
	sizes []TerminalSize
	wait  func() (int, error)
}

func (p *fakeProc) Resize(_ context.Context, w, h uint16) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sizes = append(p.sizes, TerminalSize{w, h})
	return nil
}

func (p *fakeProc) Wait() (int, error) { return p.wait() }

func (f *fakeExecer) Exec(ctx context.Context, id string, cmd []string, s ExecStreams) (ExecProcess, error) {
	f.mu.Lock()
	f.ids, f.cmds = append(f.ids, id), append(f.cmds, cmd)
	f.mu.Unlock()
	p := &fakeProc{}
	switch cmd[0] {
	case "missing":
		return nil, fakeStartError{127}
	case "echo":
		p.wait = func() (int, error) {
			io.WriteString(s.Stdout, "out\n")
			io.WriteString(s.Stderr, "err\n")
			if s.Stdin != nil {
				io.Copy(s.Stdout, s.Stdin)
			}
			return 3, nil
		}
	case "size":
		p.sizes = []TerminalSize{{s.Width, s.Height}}
		p.wait = func() (int, error) {
			io.Copy(io.Discard, s.Stdin)
			p.mu.Lock()
			defer p.mu.Unlock()
			fmt.Fprintf(s.Stdout, "tty=%v %v", s.TTY, p.sizes)
			return 0, nil
		}
	case "hang":
		p.wait = func() (int, error) {
			<-ctx.Done()
			f.ended <- ctx.Err()
			return 0, ctx.Err()
		}
	}
	return p, nil
}

// execPod is a running pod with container main (running) and side (not).
func execPod() *fakeStatus {
	v := podView("default", "web-edge1", "web", "uid-web", pod.PhaseRunning)
	v.Spec.Containers = []pod.Container{{Name: "main"}, {Name: "side"}}
	v.Status.ContainerStatuses = []pod.ContainerStatus{
		{Name: "main", ContainerID: "containerd://id-main", State: pod.ContainerState{Running: &pod.StateRunning{}}},
		{Name: "side", ContainerID: "containerd://id-side", State: pod.ContainerState{Terminated: &pod.StateTerminated{ExitCode: 1}}},
	}
	return &fakeStatus{pods: []podview.View{v}}
}

// serveSocket serves s's handler on a unix socket and returns a client.
func serveSocket(t *testing.T, s *Server, sessions *execSessions) *Client {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "tug.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: s.handler(sessions)}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return &Client{SocketPath: sock}
}

func TestExec(t *testing.T) {
	ex := &fakeExecer{}
	var logged testutil.SyncBuffer
	c := serveSocket(t, &Server{Status: execPod(), Exec: ex, Log: slog.New(slog.NewTextHandler(&logged, nil))}, nil)
	ctx := context.Background()
	tests := []struct {
		name       string
		o          ExecOptions
		pod        string
		wantStatus ExitStatus
		wantOut    string
		wantErr    string
		wantCode   int // of the *StatusError
	}{
		{name: "output, exit code and stdin", pod: "web",
			o:          ExecOptions{Command: []string{"echo", "secret-arg"}, Stdin: strings.NewReader("piped\n")},
			wantStatus: ExitStatus{Code: 3}, wantOut: "out\npiped\n", wantErr: "err\n"},
		{name: "no stdin", pod: "web", o: ExecOptions{Container: "main", Command: []string{"echo"}},
			wantStatus: ExitStatus{Code: 3}, wantOut: "out\n", wantErr: "err\n"},
		{name: "tty: the first size, then a resize", pod: "web-edge1",
			o: ExecOptions{Command: []string{"size"}, TTY: true, Size: TerminalSize{80, 24},
				Stdin: strings.NewReader(""), Resize: nil},
			wantStatus: ExitStatus{}, wantOut: "tty=true [{80 24}]"},
		{name: "command not found", pod: "web", o: ExecOptions{Command: []string{"missing"}},
			wantStatus: ExitStatus{Code: 127, Error: "cannot start (127)"}},
		{name: "not running", pod: "web", o: ExecOptions{Container: "side", Command: []string{"echo"}},
			wantCode: http.StatusConflict, wantErr: "container side is not running"},
		{name: "no such container", pod: "web", o: ExecOptions{Container: "nope", Command: []string{"echo"}},
			wantCode: http.StatusBadRequest, wantErr: "container nope is not valid for pod web-edge1"},
		{name: "no such pod", pod: "db", o: ExecOptions{Command: []string{"echo"}},
			wantCode: http.StatusNotFound, wantErr: `pod "db" not found`},
		{name: "no command", pod: "web", o: ExecOptions{Command: []string{""}},
			wantCode: http.StatusBadRequest, wantErr: "no command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			tt.o.Stdout, tt.o.Stderr = &out, &errOut
			st, err := c.Exec(ctx, "default", tt.pod, tt.o)
			if tt.wantCode != 0 {
				var se *StatusError
				if !errors.As(err, &se) || se.Code != tt.wantCode || !strings.Contains(se.Message, tt.wantErr) {
					t.Errorf("Exec: %v, want %d %q", err, tt.wantCode, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if st != tt.wantStatus || out.String() != tt.wantOut || errOut.String() != tt.wantErr {
				t.Errorf("status %+v, stdout %q, stderr %q; want %+v, %q, %q", st, out.String(), errOut.String(), tt.wantStatus, tt.wantOut, tt.wantErr)
			}
		})
	}
	// The command's name is logged, never its arguments.
	if log := logged.String(); !strings.Contains(log, "command=echo") || strings.Contains(log, "secret-arg") {
		t.Errorf("the log names the command without its arguments:\n%s", log)
	}
	ex.mu.Lock()
	defer ex.mu.Unlock()
	if ex.ids[0] != "id-main" || !slices.Equal(ex.cmds[0], []string{"echo", "secret-arg"}) {
		t.Errorf("first exec in %q of %q, want id-main, echo secret-arg", ex.ids[0], ex.cmds[0])
	}
}

// TestExecClientGoneKills: when the client goes away, or the server shuts
// down, the command's context ends.
func TestExecClientGoneKills(t *testing.T) {
	for _, how := range []string{"client gone", "server stops"} {
		t.Run(how, func(t *testing.T) {
			ex := &fakeExecer{ended: make(chan error, 1)}
			sessions := &execSessions{stop: make(chan struct{})}
			c := serveSocket(t, &Server{Status: execPod(), Exec: ex}, sessions)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				st, err := c.Exec(ctx, "default", "web", ExecOptions{Command: []string{"hang"}, Stdout: io.Discard})
				if err == nil && st.Error != "" {
					err = errors.New(st.Error)
				}
				done <- err
			}()
			deadline := time.After(10 * time.Second)
			for {
				ex.mu.Lock()
				n := len(ex.ids)
				ex.mu.Unlock()
				if n > 0 {
					break
				}
				select {
				case <-deadline:
					t.Fatal("the exec never started")
				case <-time.After(10 * time.Millisecond):
				}
			}
			if how == "client gone" {
				cancel()
			} else {
				close(sessions.stop)
			}
			select {
			case err := <-ex.ended:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("the command's context ended with %v", err)
				}
			case <-deadline:
				t.Fatal("the command's context never ended")
			}
			if err := <-done; err == nil {
				t.Error("Exec returned neither an error nor an exit error")
			}
			sessions.running.Wait() // the session has ended
		})
	}
}

func TestExecFrameOversizeEndsSession(t *testing.T) {
	ex := &fakeExecer{ended: make(chan error, 1)}
	c := serveSocket(t, &Server{Status: execPod(), Exec: ex}, nil)
	conn, br, err := c.upgrade(context.Background(), "/pods/default/web/exec?command=hang&stdin=true", UpgradeExec)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A header announcing more than MaxFramePayload: the session ends, the
	// command is killed, and the exit frame says why.
	if _, err := conn.Write([]byte{byte(StreamStdin), 0, 2, 0, 0}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ex.ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the command was not killed")
	}
	st, p, err := ReadFrame(br)
	if err != nil || st != StreamExit || !strings.Contains(string(p), "context canceled") {
		t.Errorf("frame %d %q, %v; want the exit frame", st, p, err)
	}
}

func TestRestartEndpoint(t *testing.T) {
	st := execPod()
	st.pods[0].Spec.InitContainers = []pod.Container{{Name: "setup"}}
	restarts := &fakeRestarter{}
	c := serveSocket(t, &Server{Status: st, Restarts: restarts}, nil)
	tests := []struct {
		name, container string
		want            []string
		code            int
		msg             string
	}{
		{name: "every running container", want: []string{"main"}},
		{name: "one", container: "main", want: []string{"main"}},
		{name: "not running", container: "side", code: http.StatusConflict, msg: "container side is not running"},
		{name: "init container", container: "setup", code: http.StatusBadRequest, msg: "is an init container"},
		{name: "no such container", container: "nope", code: http.StatusBadRequest, msg: "container nope is not valid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			restarts.asked = nil
			ans, err := c.Restart(context.Background(), "default", "web", tt.container)
			if tt.code != 0 {
				var se *StatusError
				if !errors.As(err, &se) || se.Code != tt.code || !strings.Contains(se.Message, tt.msg) || restarts.asked != nil {
					t.Errorf("Restart: %v (asked %v), want %d %q and nothing asked", err, restarts.asked, tt.code, tt.msg)
				}
				return
			}
			if err != nil || !slices.Equal(ans.Containers, tt.want) || !slices.Equal(restarts.asked, tt.want) {
				t.Errorf("Restart: %+v, %v (asked %v), want %v", ans, err, restarts.asked, tt.want)
			}
		})
	}
}

type fakeRestarter struct{ asked []string }

func (f *fakeRestarter) Restart(uid string, names []string) error {
	f.asked = names
	return nil
}
