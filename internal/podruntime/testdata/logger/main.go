// Command logger stands in for "tug logger <settings>" in podruntime's
// end-to-end tests: the shim runs it with the container's stdout on fd 3,
// stderr on fd 4 and the ready pipe on fd 5.
package main

import (
	"fmt"
	"os"

	"tug/internal/podlogs"
)

func main() {
	if len(os.Args) != 3 || os.Args[1] != "logger" {
		fmt.Fprintln(os.Stderr, "usage: logger logger <settings>")
		os.Exit(2)
	}
	err := podlogs.RunLogger(os.Args[2], os.NewFile(3, "stdout"), os.NewFile(4, "stderr"), os.NewFile(5, "ready"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
