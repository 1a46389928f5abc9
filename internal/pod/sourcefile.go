package pod

import "time"

// Origin says where a manifest came from. Source names the source as a whole
// ("file:/etc/tug/manifests" or "http://host/pods.yaml"); File names the one
// document set inside it (a path, or the URL again).
type Origin struct {
	Source string
	File   string
}

// SourceFile is what a source read from one file (or URL): the pods it
// defines, or the error that kept it from being read. A source reports every
// file it sees, broken ones included, so that the store can keep the last
// good version of a broken file's pods.
type SourceFile struct {
	Origin
	Pods    []*Pod    // decoded, defaulted, validated and named; nil when Err != nil
	Objects []*Object // the ConfigMaps, Secrets and claims beside them; nil when Err != nil
	Err     error     // read or parse error; joined *FieldError values for bad content
	Hash    string    // sha256 hex of the raw bytes ("" when unreadable)
	// Version is the version of the signed bundle the pods came from (a
	// URL source with --manifest-verify-key); 0 for a file or an unsigned
	// body.
	Version uint64
	// Windows are the update windows the signed bundle sets for its own
	// content, which replace the device's; empty for the device's.
	Windows Windows
	// Rollout is the signed bundle's rollout plan and halt; empty for a
	// file or an unsigned body.
	Rollout Rollout
	ModTime time.Time // modification time of the file, zero for URLs
}

// Windows are a bundle's update windows, in the syntax of package window
// ("" for the device's own).
type Windows struct {
	Update   string
	Download string
}

// Rollout is a signed bundle's rollout plan and halt, each the JSON of its
// envelope header field as package wave reads it ("" for none).
type Rollout struct {
	Plan string
	Halt string
}
