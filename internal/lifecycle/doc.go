// Package lifecycle owns running containers' lifecycle handlers: a
// container's postStart handler once it has started, its preStop handler
// before its stop signal, with the probes' actions (package prober). It is
// one of the sync loop's hooks (reconcile.PoststartHook and PrestopHook);
// what a failure does to the container (an event, a stop, a waiting reason)
// is the sync loop's to decide.
package lifecycle
