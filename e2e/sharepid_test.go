//go:build e2e

package e2e

import (
	"fmt"
	"testing"

	"tug/internal/pod"
)

// TestStopOverExitedContainer: tug stopped right after the container of a
// restartPolicy Never pod exited (while its task is being reaped), then
// restarted, removes that pod with its shim. The stop used to cut the
// task's delete short: containerd dropped the task but its shim stayed,
// with nothing left to end it (the leak check of the harness fails on a
// shim left behind).
func TestStopOverExitedContainer(t *testing.T) {
	tg := startTug(t, tugOpts{})
	for round := range 3 {
		name := fmt.Sprintf("done%d", round)
		tg.writeManifest(name+".yaml", podYAML{name: name, restartPolicy: "Never",
			containers: []ctrYAML{{name: "main", image: tg.image, script: "echo done"}}}.String())
		tg.waitPod(startTimeout, name, "Succeeded", phaseIs(pod.PhaseSucceeded))
		if err := tg.Stop(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		tg.Start()
		tg.waitPod(startTimeout, name, "Succeeded after the restart", phaseIs(pod.PhaseSucceeded))
		tg.removePods(name)
	}
}
