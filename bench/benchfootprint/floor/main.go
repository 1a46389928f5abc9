// Command floor is the least an agent in Go on containerd's client costs in
// memory, measured by benchfootprint beside tug ("the floor"). It connects
// to containerd and does only what tug's PLEG must do to notice a change:
// list the namespace's tasks once a second and its containers once a
// minute; with tug's GC percent and GOMAXPROCS and, after -page-out-after,
// tug's giving back of its executable's start-up pages. No pods, no API,
// no logs: what tug costs above it is what tug does; what it costs is what
// any such agent would.
//
//	floor -address SOCKET -namespace NS [-page-out-after 1m]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"
	"time"

	tasks "github.com/containerd/containerd/api/services/tasks/v1"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"

	"tug/internal/exepages"
)

// gcPercent and maxProcs are tug's GOGC and GOMAXPROCS (agentGCPercent,
// agentMaxProcs).
const (
	gcPercent = 50
	maxProcs  = 1
)

func main() {
	address := flag.String("address", "", "containerd's socket")
	namespace := flag.String("namespace", "", "containerd namespace to list")
	pageOutAfter := flag.Duration("page-out-after", time.Minute, "give back the executable's pages this long after start, as tug's --page-out-executable-after (0: never)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *address, *namespace, *pageOutAfter); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, address, namespace string, pageOutAfter time.Duration) error {
	if address == "" || namespace == "" {
		return fmt.Errorf("-address and -namespace are required")
	}
	debug.SetGCPercent(gcPercent)
	runtime.GOMAXPROCS(maxProcs)
	client, err := containerd.New(address)
	if err != nil {
		return err
	}
	defer client.Close()
	ctx = namespaces.WithNamespace(ctx, namespace)
	var pageOut <-chan time.Time
	if pageOutAfter > 0 {
		pageOut = time.After(pageOutAfter)
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for n := 0; ; n++ {
		if _, err := client.TaskService().List(ctx, &tasks.ListTasksRequest{}); err != nil {
			return fmt.Errorf("list tasks: %w", err)
		}
		if n%60 == 0 {
			if _, err := client.ContainerService().List(ctx); err != nil {
				return fmt.Errorf("list containers: %w", err)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-pageOut:
			if _, err := exepages.GiveBack(); err != nil {
				return fmt.Errorf("give back the executable's pages: %w", err)
			}
		case <-tick.C:
		}
	}
}
