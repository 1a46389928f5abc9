package rollout

import "tug/internal/pod"

// Annotations a pod may carry; the manifest parser checks their values.
const (
	// AnnotationTimeout holds the pod's rollout timeout as a Go duration
	// ("90s"); "0" turns rollback off for the pod.
	AnnotationTimeout = pod.AnnotationRolloutTimeout
	// AnnotationMaxRestarts holds how many restarts an update may cause
	// before it fails (default 2).
	AnnotationMaxRestarts = pod.AnnotationRolloutMaxRestarts
)

// ParseTimeout reads a tug.io/rollout-timeout value.
var ParseTimeout = pod.ParseRolloutTimeout

// ParseMaxRestarts reads a tug.io/rollout-max-restarts value.
var ParseMaxRestarts = pod.ParseRolloutMaxRestarts
