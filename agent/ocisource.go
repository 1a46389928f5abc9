package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"

	"github.com/containerd/containerd/v2/core/remotes"
	"github.com/prometheus/client_golang/prometheus"

	"tug/internal/bundle"
	"tug/internal/config"
	"tug/internal/policy"
	"tug/internal/registry"
	"tug/internal/source"
)

// ociResolver is the resolver of the OCI sources: the registry hosts of
// --registry-config-dir (mirrors, CAs) and the --image-pull-bandwidth cap
// that image pulls share, and the node's registry credentials,
// <root-dir>/config.json. A mirror that answers is logged when it is
// another host than the last one that did (a poll is one HEAD: logging
// each would repeat the same line every minute).
func ociResolver(ctx context.Context, cfg config.Config, registries *registry.Registry, log *slog.Logger) remotes.Resolver {
	var (
		mu   sync.Mutex
		last registry.Served
	)
	observe := func(s registry.Served) {
		mu.Lock()
		changed := s != last
		last = s
		mu.Unlock()
		if changed && s.Mirror {
			log.Info("bundle registry answers from a mirror", "host", s.Host)
		}
	}
	creds := registry.FileCredentials(filepath.Join(cfg.RootDir, "config.json"), log)
	return registries.Resolver(ctx, creds, observe)
}

// newOCISources builds one source per --manifest-oci. Each checkpoint
// lives under <root-dir>/checkpoints, named by a hash of the source's name
// (as the URL source's).
func newOCISources(ctx context.Context, cfg config.Config, registries *registry.Registry, hostname string, sink source.Sink, log *slog.Logger) ([]*source.OCI, error) {
	if len(cfg.ManifestOCI) == 0 {
		return nil, nil
	}
	keys, err := bundle.LoadPublicKeys(cfg.ManifestVerifyKey)
	if err != nil {
		return nil, err
	}
	resolver := ociResolver(ctx, cfg, registries, log)
	var out []*source.OCI
	for _, ref := range cfg.ManifestOCI {
		o, err := source.NewOCI(source.OCIConfig{
			Ref:        ref,
			Resolver:   resolver,
			Period:     cfg.OCICheckFrequency,
			VerifyKeys: keys,
			Checkpoint: checkpointPath(cfg.RootDir, source.OCIPrefix+ref),
			Hostname:   hostname,
			Log:        log,
		}, sink)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

// ociCollector exports the OCI sources' applied digests and polls on
// /metrics.
type ociCollector struct{ sources []*source.OCI }

var (
	ociAppliedDesc = prometheus.NewDesc("tug_manifest_oci_applied_info",
		"The bundle artifact an OCI source applies (1 per source, its manifest digest as a label; none before one is applied).",
		[]string{"source", "digest"}, nil)
	ociPullsDesc = prometheus.NewDesc("tug_manifest_oci_pulls_total",
		"Bundle artifacts an OCI source pulled (a digest other than the applied or refused one).", []string{"source"}, nil)
	ociUnchangedDesc = prometheus.NewDesc("tug_manifest_oci_unchanged_polls_total",
		"Polls of an OCI source whose reference named the applied (or refused) digest: one HEAD request each.", []string{"source"}, nil)
	ociLastSuccessDesc = prometheus.NewDesc("tug_manifest_oci_last_success_timestamp_seconds",
		"When an OCI source last reached its registry and took in (or kept) its bundle.", []string{"source"}, nil)
)

func (c ociCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- ociAppliedDesc
	ch <- ociPullsDesc
	ch <- ociUnchangedDesc
	ch <- ociLastSuccessDesc
}

func (c ociCollector) Collect(ch chan<- prometheus.Metric) {
	for _, o := range c.sources {
		st := o.Status()
		if st.Digest != "" {
			ch <- prometheus.MustNewConstMetric(ociAppliedDesc, prometheus.GaugeValue, 1, o.Name(), st.Digest)
		}
		ch <- prometheus.MustNewConstMetric(ociPullsDesc, prometheus.CounterValue, float64(st.FullResponses), o.Name())
		ch <- prometheus.MustNewConstMetric(ociUnchangedDesc, prometheus.CounterValue, float64(st.NotModified), o.Name())
		if !st.LastSuccess.IsZero() {
			ch <- prometheus.MustNewConstMetric(ociLastSuccessDesc, prometheus.GaugeValue, float64(st.LastSuccess.UnixNano())/1e9, o.Name())
		}
	}
}

// registerOCIMetrics registers the OCI sources' metrics.
func registerOCIMetrics(reg prometheus.Registerer, sources []*source.OCI) error {
	if len(sources) == 0 {
		return nil
	}
	if err := reg.Register(ociCollector{sources}); err != nil {
		return fmt.Errorf("OCI source metrics: %w", err)
	}
	return nil
}

// limitOCISources gives each OCI source the device and user-namespace
// rules of the URL source (--url-allowed-devices, --url-user-namespaces):
// both are the fleet's remote sources, and a source absent from
// AllowedDevices could use every device.
func limitOCISources(pl *policy.Policy, cfg config.Config, sources []*source.OCI) {
	for _, o := range sources {
		if pl.AllowedDevices == nil {
			pl.AllowedDevices = map[string][]string{}
		}
		pl.AllowedDevices[o.Name()] = cfg.URLAllowedDevices
		if cfg.URLUserNamespaces == "required" {
			if pl.RequireUserNamespaces == nil {
				pl.RequireUserNamespaces = map[string]string{}
			}
			pl.RequireUserNamespaces[o.Name()] = "url-user-namespaces"
		}
	}
}
