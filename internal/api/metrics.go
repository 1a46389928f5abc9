package api

import (
	"fmt"
	"io"
	"net/http"

	"tug/internal/pod"
)

// phases are the pod phases /metrics always reports, so that every series
// exists even at zero.
var phases = []pod.Phase{pod.PhasePending, pod.PhaseRunning, pod.PhaseSucceeded, pod.PhaseFailed, pod.PhaseUnknown}

func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	writeMetrics(w, s.pods(), s.manifests())
}

// writeMetrics writes the few gauges tug exports, in the Prometheus text
// exposition format.
func writeMetrics(w io.Writer, pods []pod.View, manifests []pod.ManifestStatus) {
	byPhase := make(map[pod.Phase]int)
	for _, v := range pods {
		p := v.Status.Phase
		if p == "" {
			p = pod.PhaseUnknown
		}
		byPhase[p]++
	}
	broken := 0
	for _, m := range manifests {
		if m.Error != "" {
			broken++
		}
	}
	fmt.Fprintln(w, "# HELP tug_pods Pods tug manages, by phase.")
	fmt.Fprintln(w, "# TYPE tug_pods gauge")
	for _, p := range phases {
		fmt.Fprintf(w, "tug_pods{phase=%q} %d\n", p, byPhase[p])
	}
	fmt.Fprintln(w, "# HELP tug_manifests Manifest files tug reads, broken ones included.")
	fmt.Fprintln(w, "# TYPE tug_manifests gauge")
	fmt.Fprintf(w, "tug_manifests %d\n", len(manifests))
	fmt.Fprintln(w, "# HELP tug_manifest_errors Manifest files whose last version could not be used.")
	fmt.Fprintln(w, "# TYPE tug_manifest_errors gauge")
	fmt.Fprintf(w, "tug_manifest_errors %d\n", broken)
}
