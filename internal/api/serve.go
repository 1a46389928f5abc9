package api

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"time"
)

// requestTimeout bounds reading a request's header (both listeners) and,
// on the TCP health listener, reading a whole request and writing its
// answer.
const requestTimeout = 10 * time.Second

// maxHeaderBytes caps a request's header: the API's requests are tiny.
const maxHeaderBytes = 64 << 10

// shutdownTimeout bounds a graceful stop: requests in flight get this long
// to finish.
const shutdownTimeout = 5 * time.Second

// Serve serves Handler on the unix socket socketPath (required; the agent's
// is <run-dir>/tug.sock) and HealthHandler on the TCP address healthAddr (""
// means no TCP listener) until ctx ends, then shuts both down gracefully and
// returns nil. It returns an error at once if healthAddr is not a loopback
// address (ErrNotLoopback), if another process answers on socketPath
// (ErrSocketInUse) or if a listener cannot be opened, and later if a
// listener fails.
//
// The socket's directory is created with mode 0700 if missing; a stale
// socket left by a killed tug is removed, and the new one gets mode 0600, so
// that only its owner (root) can connect. The socket file is removed on
// return.
func (s *Server) Serve(ctx context.Context, socketPath, healthAddr string) error {
	if socketPath == "" {
		return errors.New("api: no socket path")
	}
	if healthAddr != "" {
		if err := checkLoopback(healthAddr); err != nil {
			return err
		}
	}
	log := s.logger()
	errLog := slog.NewLogLogger(log.Handler(), slog.LevelWarn)

	unixL, err := listenUnix(socketPath)
	if err != nil {
		return err
	}
	idle := s.IdleTimeout
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	// No server keeps an idle connection forever. The socket's has no read
	// or write timeout: GET .../logs?follow streams for as long as the
	// client wants (a read deadline would cancel the request's context).
	execs := &execSessions{stop: make(chan struct{})}
	servers := []*http.Server{{Handler: s.handler(execs), ReadHeaderTimeout: requestTimeout, IdleTimeout: idle,
		MaxHeaderBytes: maxHeaderBytes, ErrorLog: errLog}}
	// Exec sessions take their connections over: Shutdown neither tracks
	// nor waits for them, so it ends them (their commands are killed) and
	// they are waited for below.
	servers[0].RegisterOnShutdown(func() { close(execs.stop) })
	listeners := []net.Listener{unixL}
	if healthAddr != "" {
		tcpL, err := net.Listen("tcp", healthAddr)
		if err != nil {
			unixL.Close()
			return fmt.Errorf("listen on %s: %w", healthAddr, err)
		}
		servers = append(servers, &http.Server{Handler: s.HealthHandler(), ReadHeaderTimeout: requestTimeout,
			ReadTimeout: requestTimeout, WriteTimeout: requestTimeout, IdleTimeout: idle, MaxHeaderBytes: maxHeaderBytes, ErrorLog: errLog})
		listeners = append(listeners, tcpL)
		log.Info("API listening", "socket", socketPath, "health", tcpL.Addr().String())
	} else {
		log.Info("API listening", "socket", socketPath)
	}

	done := make(chan error, len(servers))
	for i, srv := range servers {
		go func() { done <- srv.Serve(listeners[i]) }()
	}
	var failed error
	pending := len(servers)
	select {
	case <-ctx.Done():
	case failed = <-done:
		pending--
	}

	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	for _, srv := range servers {
		if err := srv.Shutdown(stopCtx); err != nil {
			log.Warn("API shutdown", "err", err)
			srv.Close()
		}
	}
	ended := make(chan struct{})
	go func() {
		execs.running.Wait()
		close(ended)
	}()
	select {
	case <-ended:
	case <-stopCtx.Done():
		log.Warn("API shutdown: exec sessions still ending")
	}
	for ; pending > 0; pending-- {
		if err := <-done; failed == nil {
			failed = err
		}
	}
	if errors.Is(failed, http.ErrServerClosed) {
		failed = nil
	}
	if failed != nil {
		return fmt.Errorf("serve API: %w", failed)
	}
	log.Info("API stopped")
	return nil
}

// checkLoopback refuses an address that would listen beyond loopback: a
// host that is not a loopback IP or "localhost" (an empty host means every
// interface).
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("health address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("health address %q: tug has no authentication yet, so it listens only on 127.0.0.1 or ::1: %w", addr, ErrNotLoopback)
}

// listenUnix listens on a root-only unix socket at path, replacing a stale
// socket file but never a live socket or another kind of file.
func listenUnix(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create socket directory: %w", err)
	}
	if err := removeStale(path); err != nil {
		return nil, err
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, fmt.Errorf("restrict socket %s to root: %w", path, err)
	}
	return l, nil
}

// removeStale removes the socket file at path if no process answers on it.
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("check socket path: %w", err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("socket path %s exists and is not a socket: not removing it", path)
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return fmt.Errorf("%s: another tug is serving there: %w", path, ErrSocketInUse)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove stale socket: %w", err)
	}
	return nil
}
