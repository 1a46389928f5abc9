// Package api is tug's API: the HTTP server the agent runs and the client
// the CLI (tug pods, tug inspect, tug exec, ...) uses.
//
// The full API (pods, manifests, health, metrics) is served on a unix socket
// that only root may open (mode 0600; the agent's is <run-dir>/tug.sock);
// /healthz, /readyz and /metrics are also served on a loopback TCP address
// (--healthz-bind-address, --healthz-port) for probes and scrapers. Nothing listens beyond loopback: tug has no
// authentication yet. The server reads everything through StatusSource and
// HealthChecker, which the agent implements; rollback, restart and exec
// act through RolloutSource, Restarter and Execer.
//
// # The exec stream
//
// POST /pods/{namespace}/{name}/exec?container=C&tty=B&stdin=B&command=NAME&command=ARG...
// carries "Connection: Upgrade" and "Upgrade: tug-exec". A refusal is an
// ordinary answer: 404 (no such pod), 400 (no such container, no
// command), 409 ("container C is not running"). Otherwise tug answers
// "101 Switching Protocols" and the connection carries frames both ways
// until the command has exited:
//
//	[1 byte stream][4 bytes payload length, big-endian][payload]
//
// Streams (at most MaxFramePayload bytes of payload; a longer frame ends
// the session):
//
//	0 stdin        client → tug  bytes for the command's stdin (stdin=true)
//	1 stdout       tug → client  the command's stdout (with tty=true, stderr too)
//	2 stderr       tug → client  the command's stderr (tty=false)
//	3 resize       client → tug  {"width": W, "height": H}: the terminal's size
//	4 close-stdin  client → tug  empty: stdin ended, the command reads EOF
//	5 exit         tug → client  {"code": N} or {"code": N, "error": "..."}, last
//
// With tty=true the client's first frame is a resize frame: the command
// starts with that terminal size. The exit frame is sent after every byte
// of output; its code is the command's exit code, 126 or 127 (with the
// error) when the command could not be run (not executable, not found),
// and an error alone when it could not be started or waited for. A client
// that goes away (its connection ends) has its command killed, and so do
// tug's stop and the end of the container. ReadFrame and WriteFrame are
// the codec.
//
// Summarize computes the columns of "kubectl get pods" (READY, STATUS,
// RESTARTS, AGE) with kubectl's own rules, for the CLI and anything else
// that prints a pod on one line: the one place where STATUS is decided
// (Terminating, "Running (update: ImagePullBackOff)" and the rest).
//
// It imports only the standard library and tug/internal/pod; only agent/
// imports it.
package api
