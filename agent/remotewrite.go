package main

import (
	"cmp"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"tug/internal/config"
	"tug/internal/policy"
	"tug/internal/remotewrite"
)

// newRemoteWriter builds the --metrics-remote-write-url pusher of the
// registry /metrics serves; nil when no URL is set. Its buffer is
// <root-dir>/remote-write. The external labels are --node-labels (names
// made valid label names: node-role.kubernetes.io/edge is
// node_role_kubernetes_io_edge) and node and instance, both the node's
// name.
func newRemoteWriter(cfg config.Config, node *policy.Node, registry *prometheus.Registry, hold func() bool, log *slog.Logger) (*remotewrite.Writer, error) {
	if cfg.MetricsRemoteWriteURL == "" {
		return nil, nil
	}
	header := http.Header{}
	if cfg.MetricsRemoteWriteHeaderFile != "" {
		h, err := readHeaderFile(cfg.MetricsRemoteWriteHeaderFile, "remote write", log)
		if err != nil {
			return nil, fmt.Errorf("--metrics-remote-write-header-file: %w", err)
		}
		header = h
	}
	extra, err := policy.ParseNodeLabels(cfg.NodeLabels)
	if err != nil {
		return nil, fmt.Errorf("--node-labels: %w", err)
	}
	byName := map[string]string{}
	for k, v := range extra {
		byName[remotewrite.LabelName(k)] = v
	}
	byName["node"], byName["instance"] = node.Name, node.Name
	labels := make([]remotewrite.Label, 0, len(byName))
	for k, v := range byName {
		labels = append(labels, remotewrite.Label{Name: k, Value: v})
	}
	slices.SortFunc(labels, func(a, b remotewrite.Label) int { return cmp.Compare(a.Name, b.Name) })
	log.Info("pushing metrics by remote write", "interval", cfg.MetricsPushInterval, "sample_interval", cfg.MetricsSampleInterval, "buffer", cfg.MetricsBufferSize, "labels", labels)
	// Go's default transport, its idle connection kept from one push to
	// the next (keepIdle), with a TLS session cache: a push after the idle
	// connection was closed resumes the session (no certificate chain sent
	// again).
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, ClientSessionCache: tls.NewLRUClientSessionCache(4)}
	tr.IdleConnTimeout = keepIdle(cfg.MetricsPushInterval)
	return remotewrite.New(remotewrite.Config{
		URL:            cfg.MetricsRemoteWriteURL,
		Client:         &http.Client{Transport: tr},
		Header:         header,
		Interval:       cfg.MetricsPushInterval,
		SampleInterval: cfg.MetricsSampleInterval,
		BufferSize:     cfg.MetricsBufferSize,
		Dir:            filepath.Join(cfg.RootDir, "remote-write"),
		ExternalLabels: labels,
		Gatherer:       registry,
		Registerer:     registry,
		Log:            log,
		Hold:           hold,
	})
}

// keepIdle is how long the idle connection of a client that sends every
// period (status heartbeats, remote-write pushes) is kept: two periods and
// a tenth when the period is at most 5 minutes, so that each request
// reuses the last one's connection (a reconnection costs over 2 KB with
// the TLS session resumed, a push or heartbeat over a kept HTTP/2
// connection only its body and a few header bytes); Go's 90 s beyond, where
// the TCP keep-alive probes of a connection kept that long (some 300 KB a
// day at the IP level) cost more than a handshake each period.
func keepIdle(period time.Duration) time.Duration {
	if period > 5*time.Minute {
		return 90 * time.Second
	}
	return max(90*time.Second, 2*period+period/10)
}
