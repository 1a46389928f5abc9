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
	"net/url"
	"strconv"
	"sync"
	"time"
)

// ExecOptions are the options of Client.Exec, kubectl exec's.
type ExecOptions struct {
	// Container is the container to run in; "": the pod's default
	// container (its default-container annotation's, or its first).
	Container string
	// Command is the command and its arguments (required).
	Command []string
	// Stdin is forwarded to the command's stdin; nil: none. Its end
	// closes the command's stdin.
	Stdin io.Reader
	// Stdout and Stderr receive the command's output (with TTY, both go
	// to Stdout, as a terminal merges them); nil discards it.
	Stdout, Stderr io.Writer
	// TTY gives the command a terminal of size Size.
	TTY  bool
	Size TerminalSize
	// Resize, when not nil, delivers the terminal's new sizes.
	Resize <-chan TerminalSize
}

// Exec runs o.Command in a running container of the pod of namespace ns
// named name and streams its input and output until it exits; it returns
// how it ended. The error is for what kept the command from being asked
// for or heard from: tug unreachable (an *UnreachableError), a refusal (a
// *StatusError: ErrNotFound, ErrBadRequest for no such container, 409 for
// a container that is not running), a broken stream, or ctx's end.
func (c *Client) Exec(ctx context.Context, ns, name string, o ExecOptions) (ExitStatus, error) {
	q := url.Values{"command": o.Command}
	if o.Container != "" {
		q.Set("container", o.Container)
	}
	q.Set("tty", strconv.FormatBool(o.TTY))
	q.Set("stdin", strconv.FormatBool(o.Stdin != nil))
	path := "/pods/" + url.PathEscape(ns) + "/" + url.PathEscape(name) + "/exec?" + q.Encode()
	conn, br, err := c.upgrade(ctx, path, UpgradeExec)
	if err != nil {
		return ExitStatus{}, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()

	var mu sync.Mutex
	send := func(st Stream, p []byte) error {
		mu.Lock()
		defer mu.Unlock()
		return WriteFrame(conn, st, p)
	}
	sendSize := func(size TerminalSize) error {
		body, _ := json.Marshal(size)
		return send(StreamResize, body)
	}
	if o.TTY {
		// The first frame: the command starts with the terminal's size.
		if err := sendSize(o.Size); err != nil {
			return ExitStatus{}, fmt.Errorf("exec: send the terminal size: %w", err)
		}
	}
	done := make(chan struct{})
	defer close(done)
	if o.Resize != nil {
		go func() {
			for {
				select {
				case size := <-o.Resize:
					if sendSize(size) != nil {
						return
					}
				case <-done:
					return
				}
			}
		}()
	}
	if o.Stdin != nil {
		// It may stay blocked in a Read after Exec returns: stdin is the
		// caller's to close.
		go func() {
			if _, err := io.Copy(frameWriter{StreamStdin, send}, o.Stdin); err == nil {
				_ = send(StreamCloseStdin, nil)
			}
		}()
	}
	stdout, stderr := o.Stdout, o.Stderr
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	for {
		st, p, err := ReadFrame(br)
		if err != nil {
			if ctx.Err() != nil {
				return ExitStatus{}, ctx.Err()
			}
			if errors.Is(err, io.EOF) {
				err = errors.New("tug ended the stream without the command's exit status")
			}
			return ExitStatus{}, fmt.Errorf("exec: %w", err)
		}
		switch st {
		case StreamStdout:
			_, err = stdout.Write(p)
		case StreamStderr:
			_, err = stderr.Write(p)
		case StreamExit:
			var status ExitStatus
			if err := json.Unmarshal(p, &status); err != nil {
				return ExitStatus{}, fmt.Errorf("exec: decode the exit status: %w", err)
			}
			return status, nil
		}
		if err != nil {
			return ExitStatus{}, fmt.Errorf("exec: write the output: %w", err)
		}
	}
}

// upgrade sends POST path asking to switch to protocol proto and returns
// the connection once tug answered 101, with the reader that holds what
// followed the answer. Any other answer is a *StatusError; a failed
// connection an *UnreachableError.
func (c *Client) upgrade(ctx context.Context, path, proto string) (net.Conn, *bufio.Reader, error) {
	sock := c.SocketPath
	if sock == "" {
		return nil, nil, errors.New("api: no socket path")
	}
	dctx, cancel := context.WithTimeout(ctx, ClientTimeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(dctx, "unix", sock)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return nil, nil, &UnreachableError{SocketPath: sock, Err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://tug"+path, nil)
	if err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("request %s: %w", path, err)
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", proto)
	_ = conn.SetDeadline(time.Now().Add(ClientTimeout))
	br := bufio.NewReader(conn)
	resp, err := func() (*http.Response, error) {
		if err := req.Write(conn); err != nil {
			return nil, err
		}
		return http.ReadResponse(br, req)
	}()
	if err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("POST %s to tug at %s: %w", req.URL.Path, sock, err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		defer conn.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
		resp.Body.Close()
		var e errorBody
		_ = json.Unmarshal(body, &e) // a non-JSON answer keeps the generic message
		return nil, nil, &StatusError{Code: resp.StatusCode, Message: e.Error}
	}
	_ = conn.SetDeadline(time.Time{})
	return conn, br, nil
}
