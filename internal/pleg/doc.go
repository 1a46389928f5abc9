// Package pleg owns tug's pod lifecycle event generator: it relists tug's
// containers through a Lister (every Period, 1 s by default, and early when
// woken), keeps the last good listing as a cache, and turns the difference
// between two listings into typed events (ContainerStarted, ContainerDied,
// ContainerRemoved, ContainerChanged) with a pure function.
//
// Relisting is the source of truth. containerd's task events only wake the
// generator early (see Wake), so a death is seen within milliseconds, and
// nothing is lost when an event is: the next periodic relist sees the same
// state. A failed relist changes nothing (no event, the cache keeps the last
// good listing) and is retried at the next period.
//
// Blind spot: the generator compares snapshots, so a container created and
// removed between two relists is never reported, and one that starts and
// dies between two relists is reported as ContainerDied only. The periodic
// resync of reconcile is the safety net, as in the kubelet's GenericPLEG.
//
// It imports pod, clock and the standard library only; never podruntime (whose
// Runtime implements Lister) or reconcile (which consumes the events).
package pleg
