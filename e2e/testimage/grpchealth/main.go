// Command grpchealth is a grpc.health.v1 server for tug's test image (built
// into it by scripts/mkimage.sh as /bin/grpchealth; not part of tug). It
// answers SERVING for the service "" (the server as a whole) and for the
// service named by -service; the named service answers NOT_SERVING while
// the file named by -down exists (checked on every call) or after SIGUSR1
// (SIGUSR2 undoes it), so a test can see a grpc probe fail while the
// process stays alive. Other names are NOT_FOUND.
//
//	grpchealth [-listen :9090] [-service NAME] [-down /tmp/grpc-down]
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

type server struct {
	healthpb.UnimplementedHealthServer
	service string
	down    string
	flipped atomic.Bool
}

func (s *server) Check(_ context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	if req.GetService() != "" && req.GetService() != s.service {
		return nil, status.Errorf(codes.NotFound, "unknown service %q", req.GetService())
	}
	st := healthpb.HealthCheckResponse_SERVING
	if req.GetService() == "" {
		// the server as a whole: alive
	} else if s.flipped.Load() {
		st = healthpb.HealthCheckResponse_NOT_SERVING
	} else if _, err := os.Stat(s.down); s.down != "" && err == nil {
		st = healthpb.HealthCheckResponse_NOT_SERVING
	}
	return &healthpb.HealthCheckResponse{Status: st}, nil
}

func main() {
	listen := flag.String("listen", ":9090", "address to listen on")
	service := flag.String("service", "tug.test", "service name answered besides \"\"")
	down := flag.String("down", "/tmp/grpc-down", "NOT_SERVING while this file exists")
	flag.Parse()
	if err := run(*listen, *service, *down); err != nil {
		fmt.Fprintln(os.Stderr, "grpchealth:", err)
		os.Exit(1)
	}
}

func run(listen, service, down string) error {
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	s := &server{service: service, down: down}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGTERM, syscall.SIGINT)
	g := grpc.NewServer()
	healthpb.RegisterHealthServer(g, s)
	go func() {
		for sig := range sigs {
			switch sig {
			case syscall.SIGUSR1:
				s.flipped.Store(true)
			case syscall.SIGUSR2:
				s.flipped.Store(false)
			default:
				g.Stop()
				return
			}
		}
	}()
	fmt.Printf("grpchealth: serving %q on %s\n", service, l.Addr())
	return g.Serve(l)
}
