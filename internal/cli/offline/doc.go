// Package offline holds the tug subcommands that work on manifest files
// and signed bundles without an agent: validate (a manifest as the agent
// would read it, and the admission policy), sign and verify (the signed
// bundle of package bundle), and bundle push|pull (that bundle as an OCI
// artifact). Each returns the process exit code: 0, 1 when it failed, 2
// for a usage error. Package cli lists them beside the agent's client
// commands.
package offline

import (
	"io"

	"tug/internal/policy"
)

// PolicyFunc builds the admission policy "tug validate --policy" applies,
// as "tug run" would with otherwise default settings: levels maps a source
// name to its level's flag value; allowPrivileged and allowHostStateMounts
// are the flags of those names.
type PolicyFunc func(levels map[string]string, allowPrivileged, allowHostStateMounts bool) *policy.Policy

// Validate returns "tug validate" with the admission policies policyOf
// builds: it checks each manifest file (or every manifest of a directory)
// exactly as the agent would.
func Validate(policyOf PolicyFunc) func(args []string, stdout, stderr io.Writer) int {
	return func(args []string, stdout, stderr io.Writer) int { return validate(policyOf, args, stdout, stderr) }
}
