package main

import "io"

// startProfiles starts the CPU profile and execution trace of "tug run"
// when the binary is built with the tugprofile tag (profile_tugprofile.go)
// and TUG_CPUPROFILE / TUG_TRACE name the files; it returns what ends them.
// In a normal build it does nothing, so that the shipped binary carries no
// profiler.
var startProfiles = func(stderr io.Writer) (stop func()) { return func() {} }
