package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"
	"tug/internal/podview"
)

// ClientTimeout bounds each request of a Client, connection included.
const ClientTimeout = 5 * time.Second

// maxAnswer bounds how much of an answer a Client reads.
const maxAnswer = 64 << 20

// Client reads tug's API over its unix socket. It is safe for concurrent
// use.
type Client struct {
	// SocketPath is tug's socket (required; the agent's is
	// <run-dir>/tug.sock).
	SocketPath string
}

// Pods returns every pod tug manages, sorted by namespace and name.
func (c *Client) Pods(ctx context.Context) (podview.List, error) {
	var l podview.List
	err := c.get(ctx, "/pods", &l)
	return l, err
}

// Pod returns the pod of namespace ns named name (its static name, or its
// manifest name when only one pod has it). The error matches ErrNotFound or
// ErrAmbiguous when no pod or several pods have that name.
func (c *Client) Pod(ctx context.Context, ns, name string) (podview.View, error) {
	var v podview.View
	err := c.get(ctx, "/pods/"+url.PathEscape(ns)+"/"+url.PathEscape(name), &v)
	return v, err
}

// Manifests returns the state of every manifest file of every source.
func (c *Client) Manifests(ctx context.Context) ([]podview.ManifestStatus, error) {
	var l manifestList
	err := c.get(ctx, "/manifests", &l)
	return l.Items, err
}

// LogOptions are the options of Client.Logs, kubectl logs's.
type LogOptions struct {
	Container  string // empty: the pod's only container
	Follow     bool
	Previous   bool
	TailLines  int // < 0: all
	Since      time.Duration
	Timestamps bool
}

// Logs copies the output of a container of the pod of namespace ns named
// name to w, as "kubectl logs" prints it; with Follow it returns when the
// container stops or ctx ends. The error matches ErrNotFound or
// ErrBadRequest (no such container, no previous attempt) as Pod's does.
func (c *Client) Logs(ctx context.Context, ns, name string, o LogOptions, w io.Writer) error {
	q := url.Values{}
	if o.Container != "" {
		q.Set("container", o.Container)
	}
	if o.Follow {
		q.Set("follow", "true")
	}
	if o.Previous {
		q.Set("previous", "true")
	}
	if o.TailLines >= 0 {
		q.Set("tailLines", strconv.Itoa(o.TailLines))
	}
	if o.Since > 0 {
		q.Set("sinceSeconds", strconv.FormatInt(int64((o.Since+time.Second-1)/time.Second), 10))
	}
	if o.Timestamps {
		q.Set("timestamps", "true")
	}
	path := "/pods/" + url.PathEscape(ns) + "/" + url.PathEscape(name) + "/log"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	resp, err := c.do(ctx, http.MethodGet, path, 0)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(w, resp.Body); err != nil && ctx.Err() == nil {
		return fmt.Errorf("read log from tug at %s: %w", c.SocketPath, err)
	}
	return nil
}

// Node returns the node and its conditions.
func (c *Client) Node(ctx context.Context) (podview.NodeView, error) {
	var v podview.NodeView
	err := c.get(ctx, "/node", &v)
	return v, err
}

// get fetches path and decodes its JSON answer into out. A failed
// connection is an *UnreachableError, an answer other than 200 a
// *StatusError.
func (c *Client) get(ctx context.Context, path string, out any) error {
	return c.send(ctx, http.MethodGet, path, out)
}

// send sends a request with no body and decodes its JSON answer into out,
// as get does.
func (c *Client) send(ctx context.Context, method, path string, out any) error {
	resp, err := c.do(ctx, method, path, ClientTimeout)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return fmt.Errorf("read %s from tug at %s: %w", path, c.SocketPath, err)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("decode %s from tug at %s: %w", path, c.SocketPath, err)
	}
	return nil
}

// do sends method path and returns the 200 answer, its body unread. timeout
// bounds the whole request, body included (0: only the connection and the
// answer's header are bounded, by ClientTimeout, for a stream).
func (c *Client) do(ctx context.Context, method, path string, timeout time.Duration) (*http.Response, error) {
	sock := c.SocketPath
	if sock == "" {
		return nil, errors.New("api: no socket path")
	}
	tr := &http.Transport{
		DisableKeepAlives:     true,
		ResponseHeaderTimeout: ClientTimeout,
	}
	hc := &http.Client{Transport: tr, Timeout: timeout}
	dctx, cancel := context.WithTimeout(ctx, ClientTimeout)
	defer cancel()
	tr.DialContext = func(_ context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		conn, err := d.DialContext(dctx, "unix", sock)
		if err != nil {
			return nil, &UnreachableError{SocketPath: sock, Err: err}
		}
		return conn, nil
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://tug"+path, nil)
	if err != nil {
		return nil, fmt.Errorf("request %s: %w", path, err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		var unreachable *UnreachableError
		var netErr net.Error
		switch {
		case errors.As(err, &unreachable):
			return nil, unreachable
		case errors.As(err, &netErr) && netErr.Timeout():
			return nil, fmt.Errorf("tug at %s did not answer %s within %s: %w", sock, path, ClientTimeout, err)
		}
		return nil, fmt.Errorf("%s %s to tug at %s: %w", method, path, sock, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
		var e errorBody
		_ = json.Unmarshal(body, &e) // a non-JSON answer keeps the generic message
		return nil, &StatusError{Code: resp.StatusCode, Message: e.Error}
	}
	return resp, nil
}
