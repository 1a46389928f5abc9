package pod

// CronJob is a CronJob's spec (batch/v1) apart from its Job template,
// which is the pod that carries it. The defaults are Kubernetes': Allow,
// 3 successful and 1 failed run kept.
type CronJob struct {
	// Name and Namespace are the CronJob's own (the runs are named
	// "<name>-<scheduled minute since the epoch>-pod").
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	// Schedule is the cron expression, checked by package cronspec.
	Schedule string `json:"schedule"`
	// TimeZone is an IANA time zone name ("" is the device's local time).
	TimeZone string `json:"timeZone,omitempty"`
	// ConcurrencyPolicy is ConcurrencyAllow, ConcurrencyForbid or
	// ConcurrencyReplace.
	ConcurrencyPolicy string `json:"concurrencyPolicy"`
	// StartingDeadlineSeconds bounds how late a run may start (nil: no
	// bound).
	StartingDeadlineSeconds *int64 `json:"startingDeadlineSeconds,omitempty"`
	// Suspend stops new runs; running ones go on.
	Suspend bool `json:"suspend,omitempty"`
	// SuccessfulJobsHistoryLimit and FailedJobsHistoryLimit are how many
	// finished runs of each outcome are kept.
	SuccessfulJobsHistoryLimit int32 `json:"successfulJobsHistoryLimit"`
	FailedJobsHistoryLimit     int32 `json:"failedJobsHistoryLimit"`
}

// The concurrency policies of a CronJob.
const (
	ConcurrencyAllow   = "Allow"
	ConcurrencyForbid  = "Forbid"
	ConcurrencyReplace = "Replace"
)
