package main

import (
	"fmt"
	"os"

	"tug/internal/podlogs"
)

// runLogger is "tug logger SETTINGS", started by containerd's shim for each
// container; it outlives tug restarts, so no output is lost.
func runLogger(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("logger: want one settings argument, got %d", len(args))
	}
	stdout, stderr, ready := os.NewFile(3, "stdout"), os.NewFile(4, "stderr"), os.NewFile(5, "ready")
	return podlogs.RunLogger(args[0], stdout, stderr, ready)
}
