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
	"time"

	"tug/internal/pod"
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
func (c *Client) Pods(ctx context.Context) (pod.List, error) {
	var l pod.List
	err := c.get(ctx, "/pods", &l)
	return l, err
}

// Pod returns the pod of namespace ns named name (its static name, or its
// manifest name when only one pod has it). The error matches ErrNotFound or
// ErrAmbiguous when no pod or several pods have that name.
func (c *Client) Pod(ctx context.Context, ns, name string) (pod.View, error) {
	var v pod.View
	err := c.get(ctx, "/pods/"+url.PathEscape(ns)+"/"+url.PathEscape(name), &v)
	return v, err
}

// Manifests returns the state of every manifest file of every source.
func (c *Client) Manifests(ctx context.Context) ([]pod.ManifestStatus, error) {
	var l manifestList
	err := c.get(ctx, "/manifests", &l)
	return l.Items, err
}

// Node returns the node and its conditions.
func (c *Client) Node(ctx context.Context) (pod.NodeView, error) {
	var v pod.NodeView
	err := c.get(ctx, "/node", &v)
	return v, err
}

// get fetches path and decodes its JSON answer into out. A failed
// connection is an *UnreachableError, an answer other than 200 a
// *StatusError.
func (c *Client) get(ctx context.Context, path string, out any) error {
	sock := c.SocketPath
	if sock == "" {
		return errors.New("api: no socket path")
	}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			conn, err := d.DialContext(ctx, "unix", sock)
			if err != nil {
				return nil, &UnreachableError{SocketPath: sock, Err: err}
			}
			return conn, nil
		},
		DisableKeepAlives: true,
	}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: ClientTimeout}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://tug"+path, nil)
	if err != nil {
		return fmt.Errorf("request %s: %w", path, err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		var unreachable *UnreachableError
		var netErr net.Error
		switch {
		case errors.As(err, &unreachable):
			return unreachable
		case errors.As(err, &netErr) && netErr.Timeout():
			return fmt.Errorf("tug at %s did not answer %s within %s: %w", sock, path, ClientTimeout, err)
		}
		return fmt.Errorf("get %s from tug at %s: %w", path, sock, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return fmt.Errorf("read %s from tug at %s: %w", path, sock, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e errorBody
		_ = json.Unmarshal(body, &e) // a non-JSON answer keeps the generic message
		return &StatusError{Code: resp.StatusCode, Message: e.Error}
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("decode %s from tug at %s: %w", path, sock, err)
	}
	return nil
}
