package policy

import "fmt"

// Level is a Pod Security Standards level.
type Level string

const (
	// Privileged is unrestricted (the node-wide rules still apply).
	Privileged Level = "privileged"
	// Baseline prevents the known privilege escalations: no host
	// namespaces, privileged containers, added capabilities beyond the
	// default set, hostPath volumes, hostPorts or an Unconfined seccomp or
	// AppArmor profile.
	Baseline Level = "baseline"
	// Restricted adds the hardening best practices: only ephemeral volume
	// types, allowPrivilegeEscalation false, runAsNonRoot true and no uid 0,
	// seccomp RuntimeDefault or Localhost, every capability dropped but
	// NET_BIND_SERVICE.
	Restricted Level = "restricted"
)

// Levels lists the levels, least restrictive first. Read-only.
var Levels = []Level{Privileged, Baseline, Restricted}

// ParseLevel returns the level named s.
func ParseLevel(s string) (Level, error) {
	for _, l := range Levels {
		if string(l) == s {
			return l, nil
		}
	}
	return "", fmt.Errorf("%w %q: must be privileged, baseline or restricted", ErrUnknownLevel, s)
}
