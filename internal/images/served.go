package images

import (
	"slices"
	"strings"
	"sync"

	"tug/internal/registry"
)

// servedBy records which registry hosts answered one pull (a mirror of
// the image's registry, or the registry itself), for its Pulled event and
// log line. Safe for concurrent use: the resolver's transport calls
// observe as its requests are answered.
type servedBy struct {
	mu    sync.Mutex
	hosts []registry.Served // each host once, in the order of its first answer
}

// observe is the pull resolver's registry.Observer.
func (s *servedBy) observe(a registry.Served) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.hosts, a) {
		s.hosts = append(s.hosts, a)
	}
}

// String names the hosts that answered, a mirror as "mirror HOST":
// "mirror.example:5000" and "registry-1.docker.io" read
// "mirror mirror.example:5000, registry-1.docker.io"; "" when none did
// (every blob was present).
func (s *servedBy) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, len(s.hosts))
	for i, h := range s.hosts {
		names[i] = h.Host
		if h.Mirror {
			names[i] = "mirror " + h.Host
		}
	}
	return strings.Join(names, ", ")
}

// eventNote is what the Pulled event adds when a mirror answered the
// pull: " Pulled from mirror HOST." (with the other hosts that answered
// too, if any); "" when only the image's own registry did, so that the
// message stays the kubelet's.
func (s *servedBy) eventNote() string {
	s.mu.Lock()
	mirror := slices.ContainsFunc(s.hosts, func(h registry.Served) bool { return h.Mirror })
	s.mu.Unlock()
	if !mirror {
		return ""
	}
	return " Pulled from " + s.String() + "."
}
