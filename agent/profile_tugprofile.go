//go:build tugprofile

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
)

// A build for profiling (go build -tags tugprofile ./agent): "tug run"
// writes a CPU profile to $TUG_CPUPROFILE and an execution trace to
// $TUG_TRACE, from its start until it stops, and the heap in use when it
// stops to $TUG_MEMPROFILE (docs/benchmarks.md: where the
// start-up's time goes).
func init() {
	startProfiles = func(stderr io.Writer) func() {
		var stops []func()
		if path := os.Getenv("TUG_CPUPROFILE"); path != "" {
			if f, err := os.Create(path); err != nil {
				fmt.Fprintln(stderr, "tug: cpu profile:", err)
			} else if err := pprof.StartCPUProfile(f); err != nil {
				fmt.Fprintln(stderr, "tug: cpu profile:", err)
				f.Close()
			} else {
				stops = append(stops, func() { pprof.StopCPUProfile(); f.Close() })
			}
		}
		if path := os.Getenv("TUG_TRACE"); path != "" {
			if f, err := os.Create(path); err != nil {
				fmt.Fprintln(stderr, "tug: trace:", err)
			} else if err := trace.Start(f); err != nil {
				fmt.Fprintln(stderr, "tug: trace:", err)
				f.Close()
			} else {
				stops = append(stops, func() { trace.Stop(); f.Close() })
			}
		}
		if path := os.Getenv("TUG_MEMPROFILE"); path != "" {
			stops = append(stops, func() {
				f, err := os.Create(path)
				if err == nil {
					runtime.GC()
					err = errors.Join(pprof.WriteHeapProfile(f), f.Close())
				}
				if err != nil {
					fmt.Fprintln(stderr, "tug: heap profile:", err)
				}
			})
		}
		return func() {
			for _, stop := range stops {
				stop()
			}
		}
	}
}
