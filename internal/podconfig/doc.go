// Package podconfig owns the desired pod set: it merges the full snapshots
// that each source reports, keeps the last good version of every file whose
// newest content is broken, resolves pods defined twice, and turns every
// snapshot into an ordered list of ADD, UPDATE and REMOVE changes for the sync
// loop.
//
// It is pure logic: no I/O, no timers, no goroutines of its own. It imports
// only internal/pod and internal/clock (and the standard library); it must
// not import source, reconcile, the runtime packages or agent.
package podconfig
