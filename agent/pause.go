package main

import (
	"os"
	"os/signal"
	"syscall"
)

// runPause is `tug pause`: PID 1 of the PID namespace of a pod with
// shareProcessNamespace, as the pause container is in Kubernetes. It
// reaps the processes orphaned into it and exits 0 on SIGTERM or SIGINT.
func runPause() int {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			return 0
		}
		for {
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
	return 0
}
