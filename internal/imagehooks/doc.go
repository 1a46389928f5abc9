// Package imagehooks owns what the sync loop does about images besides
// starting containers from them: pulling a changed container's image
// before its running predecessor is stopped (PrePull, a PrestartHook), and
// repairing an image a start found damaged (Repair, a StartFailedHook).
// The pulls and repairs themselves are the runtime's, given as functions.
package imagehooks
