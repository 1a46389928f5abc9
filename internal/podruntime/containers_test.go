package podruntime

import (
	"context"
	"errors"
	"testing"
	"time"
)

// lateTimer is a context whose deadline has passed but whose timer has not
// fired yet (its Err is still nil), as a loaded machine can show.
type lateTimer struct{ context.Context }

func (lateTimer) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

func TestContextErr(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	future, cancelFuture := context.WithTimeout(context.Background(), time.Hour)
	defer cancelFuture()
	tests := []struct {
		name string
		ctx  context.Context
		want error
	}{
		{name: "no deadline", ctx: context.Background()},
		{name: "deadline ahead", ctx: future},
		{name: "cancelled", ctx: cancelled, want: context.Canceled},
		{name: "deadline passed, timer late", ctx: lateTimer{context.Background()}, want: context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := contextErr(tt.ctx); !errors.Is(got, tt.want) || (tt.want == nil) != (got == nil) {
				t.Errorf("contextErr = %v, want %v", got, tt.want)
			}
		})
	}
}
