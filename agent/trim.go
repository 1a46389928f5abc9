package main

import (
	"context"
	"log/slog"
	"time"

	"tug/internal/exepages"
)

// codeTrimmer gives back, once, the pages of tug's own executable that
// start-up mapped and an idle agent does not use (package exepages says
// how), after the start-up: image import, the first sync of every pod.
type codeTrimmer struct {
	after time.Duration // how long after start; 0: never
	log   *slog.Logger
}

// Run waits for t.after, trims, and waits for ctx to end (a component
// that returns stops the agent).
func (t codeTrimmer) Run(ctx context.Context) error {
	if t.after > 0 {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(t.after):
		}
		if n, err := exepages.GiveBack(); err != nil {
			// Kernels before 5.4 have no MADV_PAGEOUT: nothing is lost.
			t.log.Info("executable pages not given back", "err", err)
		} else {
			t.log.Debug("executable pages given back", "bytes", n)
		}
	}
	<-ctx.Done()
	return nil
}
