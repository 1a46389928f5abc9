// Package reconcile owns the sync loop: it receives the pod store's ordered
// changes, runs one worker goroutine per pod UID, and drives each pod towards
// its manifest: pinned namespaces, init containers one at a time to success,
// then the app containers, recreating only the containers whose spec hash
// changed; a removed pod is stopped and everything made for it removed.
//
// It declares the small interfaces it needs (Runtime, Sandbox) and imports
// pod and podconfig only; never podruntime, network or qos.
package reconcile
