package main

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"tug/internal/cronjob"
	"tug/internal/podruntime"
)

// TestReadCronJobRuns: the runs the containers belong to, with their
// pod's source and namespace; other pods' containers give none.
func TestReadCronJobRuns(t *testing.T) {
	slot := time.Date(2026, 3, 1, 10, 2, 0, 0, time.UTC)
	spec := func(uid string, slot time.Time) podruntime.ContainerSpec {
		return podruntime.ContainerSpec{PodUID: "p", PodSource: "file:/m", PodNamespace: "ns", CronJobUID: uid, CronJobSlot: slot}
	}
	tests := []struct {
		name  string
		specs fakeSpecs
		want  []cronjob.FoundRun
		err   bool
	}{
		{name: "no container"},
		{name: "a plain pod's container", specs: fakeSpecs{specs: []podruntime.ContainerSpec{spec("", time.Time{})}}},
		{
			name:  "a run's container",
			specs: fakeSpecs{specs: []podruntime.ContainerSpec{spec("tpl", slot)}},
			want:  []cronjob.FoundRun{{CronJob: "tpl", Source: "file:/m", Namespace: "ns", Slot: slot}},
		},
		{name: "a run's container without its slot", specs: fakeSpecs{specs: []podruntime.ContainerSpec{spec("tpl", time.Time{})}}},
		{name: "containerd fails", specs: fakeSpecs{err: errors.New("down")}, err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readCronJobRuns(context.Background(), tt.specs)
			if (err != nil) != tt.err || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("readCronJobRuns = %v, %v; want %v (error %v)", got, err, tt.want, tt.err)
			}
		})
	}
}
