// Package api is tug's read-only status API: the HTTP server the agent runs
// and the client the CLI (tug pods, tug inspect) uses.
//
// The full API (pods, manifests, health, metrics) is served on a unix socket
// that only root may open (mode 0600; the agent's is <run-dir>/tug.sock);
// /healthz, /readyz and /metrics are also served on a loopback TCP address
// (--healthz-bind-address, --healthz-port) for probes and scrapers. Nothing listens beyond loopback: tug has no
// authentication yet. The server reads everything through StatusSource and
// HealthChecker, which the agent implements, and never changes state.
//
// Summarize computes the columns of "kubectl get pods" (READY, STATUS,
// RESTARTS, AGE) with kubectl's own rules, for the CLI and anything else
// that prints a pod on one line: the one place where STATUS is decided
// (Terminating, "Running (update: ImagePullBackOff)" and the rest).
//
// It imports only the standard library and tug/internal/pod; only agent/
// imports it.
package api
