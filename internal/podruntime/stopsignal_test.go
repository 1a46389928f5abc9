package podruntime

import (
	"context"
	"syscall"
	"testing"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/moby/sys/signal"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"tug/internal/pod"
)

func TestStopSignal(t *testing.T) {
	usr1 := pod.Signal("SIGUSR1")
	tests := []struct {
		name      string
		lifecycle *pod.Lifecycle
		image     string
		want      string
	}{
		{name: "default", want: ""},
		{name: "image", image: "SIGQUIT", want: "SIGQUIT"},
		{name: "manifest over image", lifecycle: &pod.Lifecycle{StopSignal: &usr1}, image: "SIGQUIT", want: "SIGUSR1"},
		{name: "hooks only", lifecycle: &pod.Lifecycle{}, image: "SIGINT", want: "SIGINT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &pod.Container{Name: "app", Lifecycle: tt.lifecycle}
			got := stopSignal(c, ocispec.ImageConfig{StopSignal: tt.image})
			if got != tt.want {
				t.Fatalf("stopSignal = %q, want %q", got, tt.want)
			}
			var ctr containers.Container
			if err := withStopSignal(got)(context.Background(), nil, &ctr); err != nil {
				t.Fatal(err)
			}
			if l, ok := ctr.Labels[containerd.StopSignalLabel]; ok != (tt.want != "") || l != tt.want {
				t.Errorf("label = %q (set: %v), want %q", l, ok, tt.want)
			}
		})
	}
}

// TestLinuxStopSignalsParse: every stop signal validation lets through is
// one containerd can send.
func TestLinuxStopSignalsParse(t *testing.T) {
	names := []string{"SIGABRT", "SIGALRM", "SIGBUS", "SIGCHLD", "SIGCLD", "SIGCONT", "SIGFPE", "SIGHUP",
		"SIGILL", "SIGINT", "SIGIO", "SIGIOT", "SIGKILL", "SIGPIPE", "SIGPOLL", "SIGPROF",
		"SIGPWR", "SIGQUIT", "SIGSEGV", "SIGSTKFLT", "SIGSTOP", "SIGSYS", "SIGTERM", "SIGTRAP",
		"SIGTSTP", "SIGTTIN", "SIGTTOU", "SIGURG", "SIGUSR1", "SIGUSR2", "SIGVTALRM", "SIGWINCH",
		"SIGXCPU", "SIGXFSZ", "SIGRTMIN", "SIGRTMIN+1", "SIGRTMIN+15", "SIGRTMAX-14", "SIGRTMAX-1", "SIGRTMAX"}
	for _, n := range names {
		if !pod.IsLinuxStopSignal(pod.Signal(n)) {
			t.Errorf("%s: not a Linux stop signal for validation", n)
		}
		sig, err := signal.ParseSignal(n)
		if err != nil || sig <= 0 || sig > syscall.Signal(64) {
			t.Errorf("%s: containerd (moby/sys/signal) parses it as %v, %v", n, sig, err)
		}
	}
	for _, n := range []string{"SIGRTMIN+16", "SIGRTMAX-15", "SIGRTMIN+01", "TERM", "SIGterm", "9", ""} {
		if pod.IsLinuxStopSignal(pod.Signal(n)) {
			t.Errorf("%q: accepted as a Linux stop signal", n)
		}
	}
}
