package prober

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netns"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"tug/internal/pod"
	"tug/internal/testutil"
)

// splitAddr returns the port of a listener's address.
func portOf(t *testing.T, addr net.Addr) int32 {
	t.Helper()
	_, p, err := net.SplitHostPort(addr.String())
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(p)
	return int32(n)
}

func TestRunHTTP(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			if r.Header.Get("X-Probe") != "yes" || r.Host != "example.test" {
				http.Error(w, "missing header", http.StatusBadRequest)
			}
		case "/redirect":
			http.Redirect(w, r, "/fail", http.StatusFound)
		case "/fail":
			http.Error(w, "broken", http.StatusInternalServerError)
		case "/slow":
			time.Sleep(300 * time.Millisecond)
		}
	}))
	defer srv.Close()
	tls := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer tls.Close()
	port := portOf(t, srv.Listener.Addr())
	target := Target{PodIP: "127.0.0.1", Ports: []pod.ContainerPort{{Name: "http", ContainerPort: port}}}
	headers := []pod.HTTPHeader{{Name: "X-Probe", Value: "yes"}, {Name: "Host", Value: "example.test"}}
	for _, tc := range []struct {
		name    string
		action  pod.HTTPGetAction
		want    Result
		msg     string
		wantErr error
	}{
		{"ok by named port with headers", pod.HTTPGetAction{Path: "/ok", Port: pod.FromString("http"), HTTPHeaders: headers}, Success, "", nil},
		{"missing header", pod.HTTPGetAction{Path: "/ok", Port: pod.FromInt(port)}, Failure, "HTTP probe failed with statuscode: 400: missing header", nil},
		{"redirect followed", pod.HTTPGetAction{Path: "/redirect", Port: pod.FromInt(port)}, Failure, "statuscode: 500", nil},
		{"timeout", pod.HTTPGetAction{Path: "/slow", Port: pod.FromInt(port)}, Failure, "timeout", nil},
		{"https unverified", pod.HTTPGetAction{Path: "/", Port: pod.FromInt(portOf(t, tls.Listener.Addr())), Scheme: pod.URISchemeHTTPS}, Success, "", nil},
		{"unknown port name", pod.HTTPGetAction{Port: pod.FromString("nope")}, Unknown, "", ErrPortNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, msg, err := Run(context.Background(), pod.ProbeHandler{HTTPGet: &tc.action}, target, 100*time.Millisecond)
			if res != tc.want || !strings.Contains(msg, tc.msg) || !errors.Is(err, tc.wantErr) {
				t.Errorf("Run = %v, %q, %v; want %v, %q, %v", res, msg, err, tc.want, tc.msg, tc.wantErr)
			}
		})
	}
}

func TestRunTCP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := portOf(t, ln.Addr())
	ln.Close()
	target := Target{PodIP: "127.0.0.1"}
	h := pod.ProbeHandler{TCPSocket: &pod.TCPSocketAction{Port: pod.FromInt(port)}}
	if res, msg, err := Run(context.Background(), h, target, time.Second); res != Failure || !strings.Contains(msg, "refused") || err != nil {
		t.Errorf("closed port: Run = %v, %q, %v; want failed, connection refused", res, msg, err)
	}
	ln, err = net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port))))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if res, msg, err := Run(context.Background(), h, target, time.Second); res != Success || err != nil {
		t.Errorf("open port: Run = %v, %q, %v; want successful", res, msg, err)
	}
}

func TestRunGRPC(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := health.NewServer()
	hs.SetServingStatus("web", healthpb.HealthCheckResponse_NOT_SERVING)
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	go srv.Serve(ln)
	defer srv.Stop()
	port := portOf(t, ln.Addr())
	target := Target{PodIP: "127.0.0.1"}
	web := "web"
	for _, tc := range []struct {
		name    string
		service *string
		want    Result
		msg     string
	}{
		{"server", nil, Success, ""},
		{"service not serving", &web, Failure, "NOT_SERVING"},
	} {
		h := pod.ProbeHandler{GRPC: &pod.GRPCAction{Port: port, Service: tc.service}}
		if res, msg, err := Run(context.Background(), h, target, time.Second); res != tc.want || !strings.Contains(msg, tc.msg) || err != nil {
			t.Errorf("%s: Run = %v, %q, %v; want %v, %q", tc.name, res, msg, err, tc.want, tc.msg)
		}
	}
}

type fakeExec struct {
	code  int
	out   string
	sleep time.Duration
}

func (f fakeExec) Exec(ctx context.Context, _ []string) (int, []byte, error) {
	select {
	case <-time.After(f.sleep):
		return f.code, []byte(f.out), nil
	case <-ctx.Done():
		return 0, nil, fmt.Errorf("exec: %w", ctx.Err())
	}
}

func TestRunExec(t *testing.T) {
	for _, tc := range []struct {
		name string
		exec Execer
		want Result
		msg  string
		err  error
	}{
		{"exit 0", fakeExec{out: "fine\n"}, Success, "fine", nil},
		{"exit 1", fakeExec{code: 1, out: "not ready"}, Failure, "not ready", nil},
		{"exit 2 silent", fakeExec{code: 2}, Failure, "exited with 2", nil},
		{"timeout", fakeExec{sleep: time.Second}, Failure, "timed out", nil},
		{"no execer", nil, Unknown, "", ErrNoExecer},
	} {
		h := pod.ProbeHandler{Exec: &pod.ExecAction{Command: []string{"check"}}}
		res, msg, err := Run(context.Background(), h, Target{Exec: tc.exec}, 50*time.Millisecond)
		if res != tc.want || !strings.Contains(msg, tc.msg) || !errors.Is(err, tc.err) {
			t.Errorf("%s: Run = %v, %q, %v; want %v, %q, %v", tc.name, res, msg, err, tc.want, tc.msg, tc.err)
		}
	}
}

// TestDialInNetns checks that a probe reaches a listener on localhost of
// the pod's netns and not the node's, and that the dialing thread does not
// leak the namespace into the test's goroutines.
func TestDialInNetns(t *testing.T) {
	node, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	ns := testutil.NewNetns(t, "tug-probe")
	var ln net.Listener
	if err := testutil.InNetns(ns, func() (err error) {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go http.Serve(ln, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	port := portOf(t, ln.Addr())
	h := pod.ProbeHandler{HTTPGet: &pod.HTTPGetAction{Path: "/", Port: pod.FromInt(port), Scheme: pod.URISchemeHTTP}}
	var pool nsPool
	pooled := Target{NetNS: ns, PodIP: "127.0.0.1", Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
		return pool.dial(ctx, ns, network, addr)
	}}
	for _, target := range []Target{{NetNS: ns, PodIP: "127.0.0.1"}, pooled} {
		for range 20 {
			if res, msg, err := Run(context.Background(), h, target, time.Second); res != Success {
				t.Fatalf("probe in the pod's netns (pooled %v) = %v, %q, %v; want successful", target.Dial != nil, res, msg, err)
			}
		}
	}
	// The node's localhost has no such listener (the port was picked in
	// an empty namespace; on the node it is closed, or someone else's).
	if res, _, _ := Run(context.Background(), pod.ProbeHandler{TCPSocket: &pod.TCPSocketAction{Port: pod.FromInt(port)}}, Target{PodIP: "127.0.0.1"}, time.Second); res == Success {
		t.Logf("port %d also open on the node: not conclusive for the node side", port)
	}
	own, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	if !own.Equal(node) {
		t.Errorf("the test goroutine's thread is not in the node's netns after the probes: %s, node %s", own.UniqueId(), node.UniqueId())
	}
}
