package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"tug/internal/config"
	"tug/internal/images"
	"tug/internal/pod"
	"tug/internal/podview"
	"tug/internal/source"
	"tug/internal/window"
	"tug/internal/windowgate"
)

// newWindowGate builds the gate that holds the sources' updates for the
// update window (--update-window, --download-window); the file source is
// held only with --file-source-windows. Its prefetcher gets the image
// manager once the runtime is connected.
func newWindowGate(cfg config.Config, node string, labels map[string]string, sink windowgate.Sink, fileSource func() string, log *slog.Logger) (*windowgate.Gate, *imagePrefetch, error) {
	update, err := window.Parse(cfg.UpdateWindow)
	if err != nil {
		return nil, nil, fmt.Errorf("update-window: %w", err)
	}
	download, err := window.Parse(cfg.DownloadWindow)
	if err != nil {
		return nil, nil, fmt.Errorf("download-window: %w", err)
	}
	pf := &imagePrefetch{}
	g := windowgate.New(windowgate.Config{
		Sink: sink, Update: update.ForNode(node), Download: download.ForNode(node), Node: node, Labels: labels,
		Gated:    func(src string) bool { return cfg.FileSourceWindows || src != fileSource() },
		Prefetch: pf, Log: log,
	})
	return g, pf, nil
}

// imagePrefetch pulls a held spec's images, as a start would, without
// starting anything: the update window is then spent applying.
type imagePrefetch struct{ images *images.Manager }

func (p *imagePrefetch) Prefetch(ctx context.Context, pods []*pod.Pod) error {
	if p.images == nil {
		return errors.New("the image store is not ready")
	}
	var errs []error
	for _, pd := range pods {
		for _, c := range slices.Concat(pd.Spec.InitContainers, pd.Spec.Containers) {
			if images.PullPolicy(&c) == pod.PullNever {
				continue
			}
			if _, err := p.images.Ensure(ctx, pd, &c); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// gateWaits gives the status API the updates the gate holds, by file.
func gateWaits(g *windowgate.Gate) func() map[pod.Origin]podview.UpdateWaiting {
	return func() map[pod.Origin]podview.UpdateWaiting {
		out := map[pod.Origin]podview.UpdateWaiting{}
		for _, w := range g.Waits() {
			out[pod.Origin{Source: w.Source, File: w.File}] = podview.UpdateWaiting{
				Opens: w.Opens, Window: w.Window, Hash: w.Hash, Version: w.Version, Prefetched: w.Prefetched,
				WaveIndex: w.WaveIndex, Wave: w.Wave, WaveOpens: w.WaveOpens}
		}
		return out
	}
}

// gateWaves gives the status API each URL bundle's place in its rollout,
// by file.
func gateWaves(g *windowgate.Gate) func() map[pod.Origin]podview.WaveState {
	return func() map[pod.Origin]podview.WaveState {
		out := map[pod.Origin]podview.WaveState{}
		for _, r := range g.Rollouts() {
			out[pod.Origin{Source: r.Source, File: r.File}] = podview.WaveState{State: r.State, Version: r.Version,
				WaveIndex: r.WaveIndex, Wave: r.Wave, WaveOpens: r.WaveOpens, Opens: r.Opens, Reason: r.Reason}
		}
		return out
	}
}

// The URL and OCI sources checkpoint content only once the gate passes it.
var _ source.Holder = (*windowgate.Gate)(nil)
