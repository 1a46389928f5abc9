package prober

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"tug/internal/pod"
	"tug/internal/testutil"
)

// BenchmarkRun measures one probe of each network handler, from the node
// and from inside a pod's netns (the thread that enters it and dies).
func BenchmarkRun(b *testing.B) {
	ns := testutil.NewNetns(b, "tug-probe")
	var ln net.Listener
	if err := testutil.InNetns(ns, func() (err error) {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		return err
	}); err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go http.Serve(ln, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	p, _ := net.LookupPort("tcp", port)
	for _, bc := range []struct {
		name string
		h    pod.ProbeHandler
	}{
		{"httpGet", pod.ProbeHandler{HTTPGet: &pod.HTTPGetAction{Path: "/", Port: pod.FromInt(int32(p))}}},
		{"tcpSocket", pod.ProbeHandler{TCPSocket: &pod.TCPSocketAction{Port: pod.FromInt(int32(p))}}},
	} {
		for _, pooled := range []bool{false, true} {
			target := Target{NetNS: ns, PodIP: "127.0.0.1"}
			name := bc.name + "/thread-per-dial"
			if pooled {
				var pool nsPool
				target.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
					return pool.dial(ctx, ns, network, addr)
				}
				name = bc.name + "/pooled"
			}
			b.Run(name, func(b *testing.B) {
				for range b.N {
					if res, msg, err := Run(context.Background(), bc.h, target, time.Second); res != Success {
						b.Fatal(res, msg, err)
					}
				}
			})
		}
	}
}
