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

	"tug/internal/events"
)

// EventQuery selects events: each field "" matches any.
type EventQuery struct {
	Namespace string
	Pod       string // the static name
	UID       string
}

func (q EventQuery) values() url.Values {
	v := url.Values{}
	for k, s := range map[string]string{"namespace": q.Namespace, "pod": q.Pod, "uid": q.UID} {
		if s != "" {
			v.Set(k, s)
		}
	}
	return v
}

// Events returns the recent events q selects, oldest first.
func (c *Client) Events(ctx context.Context, q EventQuery) ([]events.Event, error) {
	var l EventList
	path := "/events"
	if v := q.values().Encode(); v != "" {
		path += "?" + v
	}
	err := c.get(ctx, path, &l)
	return l.Items, err
}

// WatchEvents calls fn with each event q selects, the recent ones first,
// then each new one as it happens, until ctx ends (it then returns nil),
// the agent goes away, or fn returns an error (returned as is).
func (c *Client) WatchEvents(ctx context.Context, q EventQuery, fn func(WatchEvent) error) error {
	v := q.values()
	v.Set("watch", "true")
	return watch(ctx, c, "/events?"+v.Encode(), "events", fn)
}

// watch reads the JSON lines of the watch at path (a GET that streams, as
// GET /events?watch=true does) and calls fn with each, until ctx ends (it
// then returns nil), the agent goes away, or fn returns an error (returned
// as is). what names the watched objects in errors.
func watch[T any](ctx context.Context, c *Client, path, what string, fn func(T) error) error {
	if c.SocketPath == "" {
		return errors.New("api: no socket path")
	}
	sock := c.SocketPath
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			conn, err := d.DialContext(ctx, "unix", sock)
			if err != nil {
				return nil, &UnreachableError{SocketPath: sock, Err: err}
			}
			return conn, nil
		},
		DisableKeepAlives:     true,
		ResponseHeaderTimeout: ClientTimeout,
	}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://tug"+path, nil)
	if err != nil {
		return fmt.Errorf("request %s: %w", path, err)
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		var unreachable *UnreachableError
		if errors.As(err, &unreachable) {
			return unreachable
		}
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("watch %s of tug at %s: %w", what, sock, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e errorBody
		_ = json.NewDecoder(io.LimitReader(resp.Body, maxAnswer)).Decode(&e)
		return &StatusError{Code: resp.StatusCode, Message: e.Error}
	}
	dec := json.NewDecoder(resp.Body)
	for {
		var v T
		if err := dec.Decode(&v); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("watch %s of tug at %s: %w", what, sock, err)
		}
		if err := fn(v); err != nil {
			return err
		}
	}
}
