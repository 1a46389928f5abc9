// Package kit is the measuring kit every benchmark program under bench/
// uses ("make bench"), so that a program only says what it measures:
//
//	proc.go       a process's CPU time (utime+stime of /proc/PID/stat) and
//	              memory (VmRSS, VmHWM of /proc/PID/status; Pss of
//	              /proc/PID/smaps_rollup), and the machine's idle share
//	cpu.go        the CPU of process sets over a window, as % of one core
//	io.go         the bytes a process set caused to be written to storage
//	              (write_bytes of /proc/PID/io) over a window
//	stats.go      medians, min–max, percentiles and same-run ratios
//	table.go      the report tables, as aligned text or markdown
//	containerd.go the benchmark's containerd namespaces: image import,
//	              container purge, task checks, namespace removal
//	events.go     containerd's container and task events, stamped on arrival
//	tug.go        a tug instance under test, built from ./agent, on its own
//	              directories and in its own network namespace (netns.go,
//	              where a benchmark also listens for the tug's reports)
//	env.go        the defaults the test environment (scripts/testenv.sh)
//	              exports, and the work directory's clean-up
//	lifecycle.go  waiting for tug's pods, and the end of a run (Teardown)
//	helpers.go    the shims and log drivers serving a tug, found in /proc
//	session.go    one run: containerd client, work directory, namespace and
//	              tug (Open, NewTug, Close); the resting pods' manifests
//	              and the image archive tug imports
//
// Memory is reported as PSS (proportional set size): RSS counts the pages a
// process shares with others in each of them. RSS and VmHWM stay in the
// reports beside it, so that earlier figures remain comparable.
//
// It is test tooling: it panics nowhere, holds no package state, and is
// imported only by the programs under bench/.
package kit
