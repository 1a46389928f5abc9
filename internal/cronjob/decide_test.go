package cronjob

import (
	"testing"
	"time"

	"tug/internal/cronspec"
	"tug/internal/pod"
)

func ptr[T any](v T) *T { return &v }

func TestDecide(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC) // a slot of every schedule below
	every := "* * * * *"
	tests := []struct {
		name     string
		cj       pod.CronJob
		created  time.Time
		last     time.Time
		active   int
		now      time.Time
		want     Action
		wantSlot time.Time
		replace  bool
		tooMany  bool
	}{
		{name: "nothing due before the first slot", cj: pod.CronJob{Schedule: every},
			created: t0.Add(5 * time.Second), now: t0.Add(59 * time.Second), want: Wait},
		{name: "first slot after creation", cj: pod.CronJob{Schedule: every},
			created: t0.Add(5 * time.Second), now: t0.Add(61 * time.Second), want: Start, wantSlot: t0.Add(time.Minute)},
		{name: "the slot last run is not run again", cj: pod.CronJob{Schedule: every},
			created: t0.Add(-time.Hour), last: t0, now: t0.Add(30 * time.Second), want: Wait},
		{name: "missed slots: only the most recent", cj: pod.CronJob{Schedule: "*/5 * * * *"},
			created: t0.Add(-time.Hour), last: t0, now: t0.Add(17 * time.Minute), want: Start, wantSlot: t0.Add(15 * time.Minute)},
		{name: "missed slot within the deadline", cj: pod.CronJob{Schedule: "*/5 * * * *", StartingDeadlineSeconds: ptr[int64](180)},
			last: t0, now: t0.Add(17 * time.Minute), want: Start, wantSlot: t0.Add(15 * time.Minute)},
		{name: "missed slot past the deadline", cj: pod.CronJob{Schedule: "*/5 * * * *", StartingDeadlineSeconds: ptr[int64](60)},
			last: t0, now: t0.Add(17 * time.Minute), want: Wait},
		{name: "slot past the deadline in the window is too late", cj: pod.CronJob{Schedule: every, StartingDeadlineSeconds: ptr[int64](0)},
			last: t0, now: t0.Add(time.Minute + time.Second), want: Wait},
		// As in Kubernetes: the window (now - 0, now] holds no slot.
		{name: "deadline zero starts nothing", cj: pod.CronJob{Schedule: every, StartingDeadlineSeconds: ptr[int64](0)},
			last: t0, now: t0.Add(time.Minute), want: Wait},
		{name: "more than 100 missed", cj: pod.CronJob{Schedule: every},
			last: t0, now: t0.Add(200*time.Minute + time.Second), want: Start, wantSlot: t0.Add(200 * time.Minute), tooMany: true},
		{name: "suspended", cj: pod.CronJob{Schedule: every, Suspend: true},
			last: t0, now: t0.Add(61 * time.Second), want: Suspended, wantSlot: t0.Add(time.Minute)},
		{name: "forbid with an active run", cj: pod.CronJob{Schedule: every, ConcurrencyPolicy: pod.ConcurrencyForbid},
			last: t0, active: 1, now: t0.Add(61 * time.Second), want: Forbidden, wantSlot: t0.Add(time.Minute)},
		{name: "forbid with none active", cj: pod.CronJob{Schedule: every, ConcurrencyPolicy: pod.ConcurrencyForbid},
			last: t0, now: t0.Add(61 * time.Second), want: Start, wantSlot: t0.Add(time.Minute)},
		{name: "allow with an active run", cj: pod.CronJob{Schedule: every, ConcurrencyPolicy: pod.ConcurrencyAllow},
			last: t0, active: 2, now: t0.Add(61 * time.Second), want: Start, wantSlot: t0.Add(time.Minute)},
		{name: "replace with an active run", cj: pod.CronJob{Schedule: every, ConcurrencyPolicy: pod.ConcurrencyReplace},
			last: t0, active: 1, now: t0.Add(61 * time.Second), want: Start, wantSlot: t0.Add(time.Minute), replace: true},
		{name: "replace with none active", cj: pod.CronJob{Schedule: every, ConcurrencyPolicy: pod.ConcurrencyReplace},
			last: t0, now: t0.Add(61 * time.Second), want: Start, wantSlot: t0.Add(time.Minute)},
		{name: "a forbidden slot starts late once the run ends", cj: pod.CronJob{Schedule: every, ConcurrencyPolicy: pod.ConcurrencyForbid},
			last: t0, now: t0.Add(70 * time.Second), want: Start, wantSlot: t0.Add(time.Minute)},
		{name: "a clock stepped back a day runs no slot twice", cj: pod.CronJob{Schedule: every},
			created: t0.Add(-48 * time.Hour), last: t0, now: t0.Add(-24*time.Hour + 61*time.Second), want: Wait},
		{name: "a clock stepped forward a year: the most recent slot, too many missed", cj: pod.CronJob{Schedule: every},
			last: t0, now: t0.Add(365*24*time.Hour + time.Second), want: Start, wantSlot: t0.Add(365 * 24 * time.Hour), tooMany: true},
		{name: "a forbidden slot past its deadline never starts", cj: pod.CronJob{Schedule: every, ConcurrencyPolicy: pod.ConcurrencyForbid, StartingDeadlineSeconds: ptr[int64](5)},
			last: t0, now: t0.Add(70 * time.Second), want: Wait},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := cronspec.Parse(tt.cj.Schedule)
			if err != nil {
				t.Fatal(err)
			}
			d := Decide(&tt.cj, s, time.UTC, tt.created, tt.last, tt.active, tt.now)
			if d.Action != tt.want || !d.Slot.Equal(tt.wantSlot) && tt.want != Wait || d.Replace != tt.replace || d.TooMany != tt.tooMany {
				t.Fatalf("Decide = %+v, want action %v slot %v replace %v tooMany %v", d, tt.want, tt.wantSlot, tt.replace, tt.tooMany)
			}
			if d.Next.IsZero() || !d.Next.After(tt.now) {
				t.Fatalf("Next = %v, want after %v", d.Next, tt.now)
			}
		})
	}
}

func TestDecideTimeZone(t *testing.T) {
	// 09:00 in New York is 14:00 UTC in winter.
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := cronspec.Parse("0 9 * * *")
	cj := &pod.CronJob{Schedule: "0 9 * * *"}
	created := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	d := Decide(cj, s, ny, created, time.Time{}, 0, time.Date(2026, 1, 10, 13, 59, 0, 0, time.UTC))
	if d.Action != Wait || !d.Next.Equal(time.Date(2026, 1, 10, 14, 0, 0, 0, time.UTC)) {
		t.Fatalf("before 09:00 New York: %+v", d)
	}
	d = Decide(cj, s, ny, created, time.Time{}, 0, time.Date(2026, 1, 10, 14, 0, 30, 0, time.UTC))
	if d.Action != Start || !d.Slot.Equal(time.Date(2026, 1, 10, 14, 0, 0, 0, time.UTC)) {
		t.Fatalf("at 09:00 New York: %+v", d)
	}
}

func TestPrune(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	m := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Minute) }
	tests := []struct {
		name       string
		ok, failed int32
		runs       []Finished
		want       []time.Time
	}{
		{"within limits", 3, 1, []Finished{{m(1), true}, {m(2), true}, {m(3), false}}, nil},
		{"oldest successes go", 2, 1, []Finished{{m(3), true}, {m(1), true}, {m(2), true}}, []time.Time{m(1)}},
		{"oldest failures go", 3, 1, []Finished{{m(1), false}, {m(2), false}, {m(3), false}}, []time.Time{m(2), m(1)}},
		{"zero keeps none", 0, 0, []Finished{{m(1), true}, {m(2), false}}, []time.Time{m(1), m(2)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Prune(&pod.CronJob{SuccessfulJobsHistoryLimit: tt.ok, FailedJobsHistoryLimit: tt.failed}, tt.runs)
			if len(got) != len(tt.want) {
				t.Fatalf("Prune = %v, want %v", got, tt.want)
			}
			for i := range got {
				if !got[i].Equal(tt.want[i]) {
					t.Fatalf("Prune = %v, want %v", got, tt.want)
				}
			}
		})
	}
}
