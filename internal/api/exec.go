package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"tug/internal/pod"
	"tug/internal/podview"
)

// Execer runs commands in running containers (implemented in agent/ over
// podruntime). It must be safe for concurrent use.
type Execer interface {
	// Exec starts cmd in container id (its containerd ID) with the
	// streams s, as the container's own process would run (its user,
	// environment, working directory), and returns it running. When ctx
	// ends the process is killed. An error that has an ExitCode() int
	// method means the command itself could not be run (126: not
	// executable, 127: not found), as a shell would say.
	Exec(ctx context.Context, id string, cmd []string, s ExecStreams) (ExecProcess, error)
}

// ExecStreams are the streams of one exec.
type ExecStreams struct {
	// Stdin feeds the command's stdin; nil: the command gets none.
	Stdin io.Reader
	// Stdout and Stderr receive the command's output; with TTY the
	// terminal merges both into Stdout.
	Stdout, Stderr io.Writer
	// TTY gives the command a terminal.
	TTY bool
	// Width and Height are the terminal's first size (0: unknown).
	Width, Height uint16
}

// ExecProcess is a command Execer started.
type ExecProcess interface {
	// Resize changes the size of its terminal (no-op without TTY).
	Resize(ctx context.Context, width, height uint16) error
	// Wait waits for it to exit and for its output to be copied, and
	// returns its exit code. Call it once.
	Wait() (int, error)
}

// UpgradeExec is the protocol name of the exec stream (the Upgrade header
// of POST /pods/{namespace}/{name}/exec and of its 101 answer).
const UpgradeExec = "tug-exec"

// execFirstFrameTimeout bounds how long tug waits for the first (resize)
// frame of a TTY exec before starting the command without a size.
const execFirstFrameTimeout = 10 * time.Second

// execRequest is the query of POST .../exec.
type execRequest struct {
	container  string
	command    []string
	tty, stdin bool
}

func parseExecRequest(r *http.Request) (execRequest, error) {
	q := r.URL.Query()
	req := execRequest{container: q.Get("container"), command: q["command"]}
	for _, b := range []struct {
		key string
		dst *bool
	}{{"tty", &req.tty}, {"stdin", &req.stdin}} {
		if s := q.Get(b.key); s != "" {
			v, err := strconv.ParseBool(s)
			if err != nil {
				return req, fmt.Errorf("%s=%q is not a boolean: %w", b.key, s, ErrBadRequest)
			}
			*b.dst = v
		}
	}
	if len(req.command) == 0 || req.command[0] == "" {
		return req, fmt.Errorf("no command: give it as command=NAME&command=ARG...: %w", ErrBadRequest)
	}
	if !strings.EqualFold(r.Header.Get("Upgrade"), UpgradeExec) {
		return req, fmt.Errorf("exec needs the header Upgrade: %s: %w", UpgradeExec, ErrBadRequest)
	}
	return req, nil
}

// execTarget returns the containerd ID of container name of v (v's
// default container when name is empty: its default-container annotation
// or its first container), refusing a container v does not have or that
// does not run.
func execTarget(v podview.View, name string) (string, string, error) {
	if name == "" {
		name = v.Metadata.Annotations["kubectl.kubernetes.io/default-container"]
	}
	if name == "" && len(v.Spec.Containers) > 0 {
		name = v.Spec.Containers[0].Name
	}
	for _, cs := range append(append([]pod.ContainerStatus(nil), v.Status.ContainerStatuses...), v.Status.InitContainerStatuses...) {
		if cs.Name != name {
			continue
		}
		if cs.State.Running == nil || cs.ContainerID == "" {
			return name, "", fmt.Errorf("container %s is not running: %w", name, ErrConflict)
		}
		return name, strings.TrimPrefix(cs.ContainerID, "containerd://"), nil
	}
	return name, "", fmt.Errorf("container %s is not valid for pod %s: %w", name, v.Metadata.Name, ErrBadRequest)
}

// execSessions are the exec sessions of one Serve: closing stop ends them
// (their commands are killed), and running counts those not ended yet.
// Shutdown neither tracks nor waits for the connections they took over.
type execSessions struct {
	stop    chan struct{}
	running sync.WaitGroup
}

// execHandler serves POST /pods/{namespace}/{name}/exec. sessions, when
// not nil, tracks the sessions for the server's shutdown.
func (s *Server) execHandler(sessions *execSessions) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if sessions != nil {
			sessions.running.Add(1)
			defer sessions.running.Done()
		}
		req, err := parseExecRequest(r)
		var v podview.View
		if err == nil {
			v, err = findPod(s.pods(), r.PathValue("namespace"), r.PathValue("name"))
		}
		var id string
		if err == nil {
			req.container, id, err = execTarget(v, req.container)
		}
		if err == nil && s.Exec == nil {
			err = fmt.Errorf("this tug cannot exec: %w", ErrNotFound)
		}
		if err != nil {
			s.writeError(w, err)
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			s.writeError(w, fmt.Errorf("exec: take over the connection: %w", err))
			return
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Time{})
		if _, err := io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: "+UpgradeExec+"\r\n\r\n"); err != nil {
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		if sessions != nil {
			go func() {
				select {
				case <-sessions.stop:
					cancel()
				case <-ctx.Done():
				}
			}()
		}
		// Only the command's name is logged: its arguments may carry
		// secrets.
		log := s.logger().With("pod", v.Metadata.Namespace+"/"+v.Metadata.Name, "uid", v.Metadata.UID, "container", req.container, "command", req.command[0])
		log.Info("exec started", "tty", req.tty, "stdin", req.stdin)
		st := (&execSession{conn: conn, in: brw.Reader, req: req}).run(ctx, cancel, s.Exec, id)
		log.Info("exec ended", "exit_code", st.Code, "err", st.Error)
	}
}

// execSession is one exec stream on a taken-over connection.
type execSession struct {
	conn net.Conn
	in   *bufio.Reader // the connection's reader (it may hold frames already)
	req  execRequest

	mu sync.Mutex // serialises the frames written to conn
}

func (e *execSession) send(st Stream, p []byte) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return WriteFrame(e.conn, st, p)
}

// run runs the command and returns (and sends as the exit frame) how it
// ended. cancel ends ctx, which kills the command: the client is gone.
func (e *execSession) run(ctx context.Context, cancel func(), execer Execer, id string) ExitStatus {
	streams := ExecStreams{Stdout: frameWriter{StreamStdout, e.send}, TTY: e.req.tty}
	if !e.req.tty {
		streams.Stderr = frameWriter{StreamStderr, e.send}
	}
	// A TTY exec's first frame gives the terminal's size, so that the
	// command starts with it.
	var pending []frame
	if e.req.tty {
		_ = e.conn.SetReadDeadline(time.Now().Add(execFirstFrameTimeout))
		st, p, err := ReadFrame(e.in)
		_ = e.conn.SetReadDeadline(time.Time{})
		if err != nil {
			return e.exit(ExitStatus{Error: fmt.Sprintf("read the terminal size: %v", err)})
		}
		var size TerminalSize
		if st == StreamResize && json.Unmarshal(p, &size) == nil {
			streams.Width, streams.Height = size.Width, size.Height
		} else {
			pending = append(pending, frame{st, p})
		}
	}
	var stdin *io.PipeWriter
	if e.req.stdin {
		var pr *io.PipeReader
		pr, stdin = io.Pipe()
		streams.Stdin = pr
		defer pr.Close()
	}
	proc, err := execer.Exec(ctx, id, e.req.command, streams)
	if err != nil {
		st := ExitStatus{Error: err.Error()}
		var coded interface{ ExitCode() int }
		if errors.As(err, &coded) {
			st.Code = coded.ExitCode()
		}
		if stdin != nil {
			stdin.Close()
		}
		return e.exit(st)
	}
	go e.readFrames(ctx, cancel, pending, proc, stdin)
	code, err := proc.Wait()
	st := ExitStatus{Code: code}
	if err != nil {
		st = ExitStatus{Error: err.Error()}
	}
	return e.exit(st)
}

// frame is one frame read.
type frame struct {
	stream  Stream
	payload []byte
}

// readFrames handles the client's frames (pending first) until the
// connection ends or ctx does. A connection that ends, or a frame tug
// cannot read, means the client is gone: cancel kills the command.
func (e *execSession) readFrames(ctx context.Context, cancel func(), pending []frame, proc ExecProcess, stdin *io.PipeWriter) {
	closeStdin := func(err error) {
		if stdin != nil {
			stdin.CloseWithError(err)
		}
	}
	handle := func(f frame) {
		switch f.stream {
		case StreamStdin:
			if stdin != nil {
				_, _ = stdin.Write(f.payload) // fails only once stdin is closed
			}
		case StreamCloseStdin:
			closeStdin(nil)
		case StreamResize:
			var size TerminalSize
			if json.Unmarshal(f.payload, &size) == nil {
				_ = proc.Resize(ctx, size.Width, size.Height)
			}
		}
	}
	for _, f := range pending {
		handle(f)
	}
	for ctx.Err() == nil {
		st, p, err := ReadFrame(e.in)
		if err != nil {
			closeStdin(err)
			cancel()
			return
		}
		handle(frame{st, p})
	}
}

// exit sends st as the exit frame and returns it.
func (e *execSession) exit(st ExitStatus) ExitStatus {
	body, _ := json.Marshal(st)
	_ = e.send(StreamExit, body)
	return st
}
