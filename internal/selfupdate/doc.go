// Package selfupdate owns tug's update of itself: the A/B layout of the
// binaries under <root-dir>/self, the state file that says which slot is
// good, which release is on trial and which releases were reverted, the
// launch guard that counts the launches of a release on trial and puts
// the good binary back, the updater that follows a release and installs it,
// and the trial's health gate that commits or reverts it.
//
// The layout: <root-dir>/self/a/tug and <root-dir>/self/b/tug are the two
// slots; <root-dir>/self/current is a symlink to the slot that "tug run"
// executes ("a" or "b"; absent: the installed binary runs itself); the
// state file <root-dir>/self/state.json records the committed release, its
// slot (Good, "" for the installed binary), the release on trial and the
// broken ones. Every change is a whole-file write or a symlink renamed into
// place, then an fsync of the directory, ordered so that a power cut at any
// point leaves a state the guard resolves to a binary that starts.
//
// A release follows the bundles' rollout plan and halt (package wave) and
// the device's windows (package window): it is fetched in the download or
// the update window, installed ahead into the other slot and checked there
// while the device's wave or its update window is not open (no trial
// recorded: that slot is only "not current" to the guard), and switched to
// at the opening. A device in no wave never installs it; a halt drops a
// pending release and, with revert, installs the halting one on a device
// that committed the halted version.
//
// It imports bundle (the release's envelope and checks), wave, window,
// atomicfile and the standard library; the agent wires it to the registry,
// the PLEG and the sync loop through the small interfaces declared here.
package selfupdate
