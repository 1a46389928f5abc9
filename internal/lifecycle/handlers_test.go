package lifecycle

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"tug/internal/pod"
)

// TestHandlersRun runs each hook action against a local server or a fake
// exec: success, a failure wrapping ErrHookFailed, and a sleep cut by
// its context.
func TestHandlersRun(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bad" {
			http.Error(w, "no", http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	_, portStr, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portStr)
	exec := func(_ context.Context, id string, cmd []string) (int, []byte, error) {
		if cmd[0] == "false" {
			return 1, []byte("said no"), nil
		}
		return 0, nil, nil
	}
	hk := Handlers{Exec: exec}
	sb := pod.Sandbox{IP: "127.0.0.1"}
	c := &pod.Container{Name: "c"}
	tests := []struct {
		name     string
		h        pod.LifecycleHandler
		deadline time.Duration
		fails    bool
		atLeast  time.Duration
	}{
		{name: "exec ok", h: pod.LifecycleHandler{Exec: &pod.ExecAction{Command: []string{"true"}}}},
		{name: "exec fails", h: pod.LifecycleHandler{Exec: &pod.ExecAction{Command: []string{"false"}}}, fails: true},
		{name: "http ok", h: pod.LifecycleHandler{HTTPGet: &pod.HTTPGetAction{Path: "/", Port: pod.FromInt(int32(port))}}},
		{name: "http 500", h: pod.LifecycleHandler{HTTPGet: &pod.HTTPGetAction{Path: "/bad", Port: pod.FromInt(int32(port))}}, fails: true},
		{name: "tcp ok", h: pod.LifecycleHandler{TCPSocket: &pod.TCPSocketAction{Port: pod.FromInt(int32(port))}}},
		{name: "sleep", h: pod.LifecycleHandler{Sleep: &pod.SleepAction{Seconds: 1}}, atLeast: time.Second},
		{name: "sleep cut by the deadline", h: pod.LifecycleHandler{Sleep: &pod.SleepAction{Seconds: 60}}, deadline: 200 * time.Millisecond, atLeast: 200 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if tt.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.deadline)
				defer cancel()
			}
			start := time.Now()
			err := hk.Run(ctx, &pod.Pod{}, c, "id", sb, &tt.h)
			took := time.Since(start)
			if tt.fails != (err != nil) || (err != nil && !errors.Is(err, ErrHookFailed)) {
				t.Fatalf("err = %v, want failure %v", err, tt.fails)
			}
			if took < tt.atLeast || took > tt.atLeast+5*time.Second {
				t.Errorf("took %v, want at least %v", took, tt.atLeast)
			}
		})
	}
}
