// Package podexec runs commands in a running container's task, as the
// container's own process (its user, environment, working directory and
// capabilities): ExecSync for probes and lifecycle hooks (exit code and the
// first 64 KiB of output), Exec with streams and a terminal for tug exec.
// No exec process outlives its caller: when the caller's context ends the
// process is killed, waited for and deleted.
package podexec
