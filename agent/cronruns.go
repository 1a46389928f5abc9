package main

import (
	"context"
	"fmt"

	"tug/internal/cronjob"
)

// readCronJobRuns reads the CronJob runs that tug's containers belong to
// (one entry per container: the scheduler counts each run once). It feeds
// cronjob.Scheduler.Restore.
func readCronJobRuns(ctx context.Context, rt containerSpecs) ([]cronjob.FoundRun, error) {
	specs, err := rt.ContainerSpecs(ctx)
	if err != nil {
		return nil, fmt.Errorf("containers' cronjob runs: %w", err)
	}
	var out []cronjob.FoundRun
	for _, cs := range specs {
		if cs.CronJobUID == "" || cs.CronJobSlot.IsZero() {
			continue
		}
		out = append(out, cronjob.FoundRun{CronJob: cs.CronJobUID, Source: cs.PodSource, Namespace: cs.PodNamespace, Slot: cs.CronJobSlot})
	}
	return out, nil
}
