package images

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/core/remotes/docker"

	"tug/internal/pod"
)

// TestUnreachable classifies the errors containerd's resolver returns for
// registries that cannot be reached and for registries that answer no.
func TestUnreachable(t *testing.T) {
	answer := func(status int) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Basic realm="tug-test"`)
			}
			w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
			if status == http.StatusNotFound {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(status)
				fmt.Fprint(w, `{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"}]}`)
				return
			}
			w.WriteHeader(status)
		}))
		t.Cleanup(srv.Close)
		return srv.Listener.Addr().String()
	}
	// closing accepts connections and closes them at once (reset when
	// reset is set), as a TCP relay whose backend is down does.
	closing := func(reset bool) string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				if reset {
					c.(*net.TCPConn).SetLinger(0)
				}
				c.Close()
			}
		}()
		return l.Addr().String()
	}
	refused := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		return addr
	}
	tlsServer := httptest.NewTLSServer(http.NotFoundHandler()) // its certificate is not trusted
	t.Cleanup(tlsServer.Close)
	plainServer := answer(http.StatusOK)

	tests := []struct {
		name  string
		host  string
		https bool // no plain HTTP for loopback
		want  bool
	}{
		{"connection refused", refused(), false, true},
		{"connection closed before the answer", closing(false), false, true},
		{"connection reset", closing(true), false, true},
		{"DNS failure", "tug-no-such-registry.invalid", false, true},
		{"TLS certificate not trusted", tlsServer.Listener.Addr().String(), true, true},
		{"TLS handshake with a plain HTTP server", plainServer, true, true},
		{"401", answer(http.StatusUnauthorized), false, false},
		{"403", answer(http.StatusForbidden), false, false},
		{"404 manifest unknown", answer(http.StatusNotFound), false, false},
		{"500", answer(http.StatusInternalServerError), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts []docker.RegistryOpt
			if !tt.https {
				opts = append(opts, docker.WithPlainHTTP(func(string) (bool, error) { return true, nil }))
			}
			r := docker.NewResolver(docker.ResolverOptions{Hosts: docker.ConfigureDefaultRegistries(opts...)})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_, _, err := r.Resolve(ctx, tt.host+"/tug/app:v1")
			if err == nil {
				t.Fatal("Resolve succeeded, want an error")
			}
			if got := Unreachable(err); got != tt.want {
				t.Errorf("Unreachable(%v) = %v, want %v", err, got, tt.want)
			}
		})
	}
	t.Run("stall and timeout", func(t *testing.T) {
		for _, err := range []error{ErrPullStalled, ErrPullTimeout} {
			if wrapped := fmt.Errorf("pull image %q: %w: %w", "x", pod.ErrImagePull, err); !Unreachable(wrapped) {
				t.Errorf("Unreachable(%v) = false", wrapped)
			}
		}
		if Unreachable(nil) || Unreachable(errors.New("other")) {
			t.Error("Unreachable of nil or an unrelated error is true")
		}
	})
}

// recorded is one event a fakeRecorder got.
type recorded struct{ uid, container, typ, reason, message string }

type fakeRecorder struct{ events []recorded }

func (f *fakeRecorder) Event(p *pod.Pod, container, eventType, reason, message string) {
	f.events = append(f.events, recorded{p.Metadata.UID, container, eventType, reason, message})
}

// TestUseCached: the offline fallback of an Always pull runs the image
// present only with use-cached, for an unreachable registry and an image
// that is present; it records the warning and sets the pod's condition,
// which a later successful pull clears.
func TestUseCached(t *testing.T) {
	refused := fmt.Errorf("pull image: %w: %w", pod.ErrImagePull,
		&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)})
	notFound := fmt.Errorf("pull image: %w: manifest unknown", pod.ErrImagePull)
	present := func(context.Context, string) (string, error) { return "cached", nil }
	missing := func(context.Context, string) (string, error) { return "", ErrImageNotPresent }
	tests := []struct {
		name    string
		offline string
		err     error
		local   func(context.Context, string) (string, error)
		want    bool
	}{
		{"use-cached, unreachable, present", PullOfflineUseCached, refused, present, true},
		{"default is use-cached", "", refused, present, true},
		{"fail", PullOfflineFail, refused, present, false},
		{"registry answered", PullOfflineUseCached, notFound, present, false},
		{"nothing cached", PullOfflineUseCached, refused, missing, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &fakeRecorder{}
			m := New(Config{PullOffline: tt.offline, Recorder: rec, Log: slog.New(slog.DiscardHandler)})
			p := &pod.Pod{}
			p.Metadata.UID = "uid-1"
			p.Spec.Containers = []pod.Container{{Name: "main", Image: "reg.example/app:latest"}}
			r := request{pod: p, container: "main", image: "reg.example/app:latest", policy: pod.PullAlways}
			img, ok := useCached(context.Background(), m, r, "reg.example/app:latest", tt.err, tt.local)
			if ok != tt.want {
				t.Fatalf("useCached = %q, %v; want %v", img, ok, tt.want)
			}
			cond := m.ImageFromCacheCondition(p)
			if !tt.want {
				if cond != nil || len(rec.events) != 0 {
					t.Errorf("no fallback, yet condition %+v and events %+v", cond, rec.events)
				}
				return
			}
			if len(rec.events) != 1 || rec.events[0].typ != eventWarning || rec.events[0].reason != pod.ReasonPullOfflineUsingCache ||
				!strings.Contains(rec.events[0].message, `"reg.example/app:latest"`) || !strings.Contains(rec.events[0].message, "connection refused") {
				t.Errorf("events %+v, want one PullOfflineUsingCache warning naming the image and the error", rec.events)
			}
			if cond == nil || cond.Type != pod.ConditionImageFromCache || cond.Status != "True" || cond.Reason != pod.ReasonPullOfflineUsingCache ||
				!strings.Contains(cond.Message, `container main runs the cached image "reg.example/app:latest"`) {
				t.Fatalf("condition %+v, want tug.io/ImageFromCache True naming the container and image", cond)
			}
			// A pod whose container no longer names the image has no
			// condition; a successful pull clears it.
			changed := *p
			changed.Spec.Containers = []pod.Container{{Name: "main", Image: "reg.example/app:v2"}}
			if c := m.ImageFromCacheCondition(&changed); c != nil {
				t.Errorf("condition of a pod that no longer names the image: %+v", c)
			}
			m.pulledFor(r)
			if c := m.ImageFromCacheCondition(p); c != nil {
				t.Errorf("condition after a successful pull: %+v", c)
			}
		})
	}
}

func TestPullLeaseBase(t *testing.T) {
	a, b := pullLeaseBase("docker.io/library/busybox:1.35"), pullLeaseBase("docker.io/library/busybox:1.36")
	if a != pullLeaseBase("docker.io/library/busybox:1.35") || a == b || !strings.HasPrefix(a, pullLeasePrefix) || !strings.HasSuffix(a, "-") {
		t.Errorf("pullLeaseBase: %q and %q, want stable, distinct, %q-prefixed and ending in -", a, b, pullLeasePrefix)
	}
	// The ID with its stamp is a valid containerd identifier (at most 76
	// characters).
	if id := a + "0123456789abc"; len(id) > 76 {
		t.Errorf("lease ID %q is longer than 76 characters", id)
	}
}
