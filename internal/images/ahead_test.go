package images

import (
	"testing"
	"time"

	"tug/internal/pod"
)

// TestAheadPulls: a pull made ahead of a start serves that start once, for
// the same pod, container and image, within aheadFor; a pod that goes
// loses its marks.
func TestAheadPulls(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := &pod.Pod{Metadata: pod.ObjectMeta{UID: "uid-1"}}
	other := &pod.Pod{Metadata: pod.ObjectMeta{UID: "uid-2"}}
	r := request{pod: p, container: "app", image: "busybox:1.36"}
	tests := []struct {
		name  string
		take  request
		after time.Duration
		forg  string
		want  bool
	}{
		{name: "the start that follows", take: r, after: 30 * time.Second, want: true},
		{name: "another container", take: request{pod: p, container: "side", image: r.image}, want: false},
		{name: "another image", take: request{pod: p, container: "app", image: "busybox:1.37"}, want: false},
		{name: "another pod", take: request{pod: other, container: "app", image: r.image}, want: false},
		{name: "too late", take: r, after: aheadFor, want: false},
		{name: "the pod went", take: r, forg: "uid-1", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a aheadPulls
			a.mark(r, t0)
			if tt.forg != "" {
				a.forget(tt.forg)
			}
			if got := a.take(tt.take, t0.Add(tt.after)); got != tt.want {
				t.Errorf("take = %v, want %v", got, tt.want)
			}
			if a.take(r, t0) && tt.want {
				t.Error("a mark served a second start")
			}
		})
	}
}
