package cronjob

import (
	"slices"
	"time"

	"tug/internal/cronspec"
	"tug/internal/pod"
)

// Action is what a CronJob's schedule asks for now.
type Action int

// The actions of Decide.
const (
	// Wait: no schedule slot is due.
	Wait Action = iota
	// Start: start a run for Decision.Slot (after stopping the active
	// runs when Decision.Replace).
	Start
	// Suspended: a slot is due but spec.suspend holds it back; it starts
	// once the CronJob is resumed, if still within its deadline.
	Suspended
	// TooLate: the slot is due but later than startingDeadlineSeconds
	// allows; it never starts.
	TooLate
	// Forbidden: the slot is due but a run is active and the policy is
	// Forbid; it starts when the active run ends, if still within its
	// deadline.
	Forbidden
)

// Decision is Decide's answer.
type Decision struct {
	Action Action
	// Slot is the most recent due schedule time (zero with Wait).
	Slot time.Time
	// Replace reports that the active runs are stopped first (Start
	// with concurrencyPolicy Replace).
	Replace bool
	// Missed is how many slots were due (counted up to
	// cronspec.MaxMissed+1); TooMany reports more than cronspec.MaxMissed.
	Missed  int
	TooMany bool
	// Next is the first schedule time after now.
	Next time.Time
}

// MaxClockStepBack bounds how far ahead of the clock a CronJob's last
// schedule time (or first-seen time) may be and still hold its slots: a
// clock stepped back by up to a day (NTP correcting a clock that was
// ahead) does not run a slot twice, since the slots up to the last
// schedule time were run; one further ahead is taken as unknown, so that
// a clock that was a year ahead does not stop the CronJob for a year
// (Scheduler moves such a time to now, and says so).
const MaxClockStepBack = 25 * time.Hour

// Decide is the CronJob controller's decision (Kubernetes'
// pkg/controller/cronjob, controller v2), as a pure function: of the slots
// since the last scheduled run (or since the CronJob was first seen),
// bounded below by now - startingDeadlineSeconds when that is set, only
// the most recent is considered; it starts unless suspended, too late,
// or forbidden by an active run. A slot that does not start leaves the
// last schedule time alone, so it is considered again.
func Decide(cj *pod.CronJob, s cronspec.Schedule, loc *time.Location, created, last time.Time, active int, now time.Time) Decision {
	earliest := created
	if !last.IsZero() {
		earliest = last
	}

	var deadline time.Duration
	if cj.StartingDeadlineSeconds != nil {
		deadline = time.Duration(*cj.StartingDeadlineSeconds) * time.Second
		if d := now.Add(-deadline); d.After(earliest) {
			earliest = d
		}
	}
	d := Decision{Next: s.Next(now, loc)}
	d.Slot, d.Missed = s.Missed(earliest, now, loc)
	d.TooMany = d.Missed > cronspec.MaxMissed
	switch {
	case d.Missed == 0:
		d.Action = Wait
	case cj.Suspend:
		d.Action = Suspended
	case cj.StartingDeadlineSeconds != nil && d.Slot.Add(deadline).Before(now):
		d.Action = TooLate
	case cj.ConcurrencyPolicy == pod.ConcurrencyForbid && active > 0:
		d.Action = Forbidden
	default:
		d.Action = Start
		d.Replace = cj.ConcurrencyPolicy == pod.ConcurrencyReplace && active > 0
	}
	return d
}

// Finished is one finished run, for Prune.
type Finished struct {
	Slot      time.Time
	Succeeded bool
}

// Prune returns the slots of the finished runs beyond the history limits:
// the newest successfulJobsHistoryLimit successful runs and the newest
// failedJobsHistoryLimit failed ones are kept.
func Prune(cj *pod.CronJob, runs []Finished) []time.Time {
	var ok, failed []time.Time
	for _, r := range runs {
		if r.Succeeded {
			ok = append(ok, r.Slot)
		} else {
			failed = append(failed, r.Slot)
		}
	}
	return append(beyond(ok, int(cj.SuccessfulJobsHistoryLimit)), beyond(failed, int(cj.FailedJobsHistoryLimit))...)
}

// beyond returns the oldest of slots beyond the newest keep.
func beyond(slots []time.Time, keep int) []time.Time {
	if len(slots) <= keep {
		return nil
	}
	sorted := slices.Clone(slots)
	slices.SortFunc(sorted, func(a, b time.Time) int { return b.Compare(a) }) // newest first
	return sorted[keep:]
}
