package devices

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"tags.cncf.io/container-device-interface/pkg/parser"
)

// DefaultAccess is the cgroup access a host device node gets when its
// selector names none: read and write, as the kubelet's device plugins
// give (mknod is not needed: the runtime creates the node).
const DefaultAccess = "rw"

// cdiPrefix marks a selector that names a CDI device class.
const cdiPrefix = "cdi:"

// Resource is one extended resource the node declares
// (--device-resource NAME=SELECTOR). Exactly one of Glob and CDIKind is
// set.
type Resource struct {
	// Name is the resource's name, as pods' resources.limits spell it:
	// "example.com/dongle".
	Name string
	// Glob matches host device nodes ("/dev/ttyUSB*"); each match is one
	// unit, given to the container at the same path.
	Glob string
	// Access is the cgroup access of Glob's nodes: a non-empty subset of
	// "rwm". Default DefaultAccess.
	Access string
	// CDIKind is a CDI device kind, "vendor.com/class": each CDI device of
	// that kind is one unit.
	CDIKind string
}

// String is the declaration as written: NAME=SELECTOR.
func (r Resource) String() string {
	if r.CDIKind != "" {
		return r.Name + "=" + cdiPrefix + r.CDIKind
	}
	if r.Access != DefaultAccess {
		return r.Name + "=" + r.Glob + ":" + r.Access
	}
	return r.Name + "=" + r.Glob
}

// ParseResource parses one --device-resource: NAME=GLOB[:ACCESS] (GLOB an
// absolute path pattern of host device nodes, ACCESS a subset of "rwm",
// default DefaultAccess) or NAME=cdi:VENDOR/CLASS. NAME is an extended
// resource name: a domain, "/", a name, and not in the kubernetes.io
// domain.
func ParseResource(s string) (Resource, error) {
	name, sel, ok := strings.Cut(strings.TrimSpace(s), "=")
	if !ok || sel == "" {
		return Resource{}, fmt.Errorf("%w: %q: want NAME=GLOB[:ACCESS] or NAME=cdi:VENDOR/CLASS", ErrBadResource, s)
	}
	if err := CheckName(name); err != nil {
		return Resource{}, fmt.Errorf("%w: %q: %w", ErrBadResource, s, err)
	}
	r := Resource{Name: name}
	if kind, ok := strings.CutPrefix(sel, cdiPrefix); ok {
		if err := checkKind(kind); err != nil {
			return Resource{}, fmt.Errorf("%w: %q: %w", ErrBadResource, s, err)
		}
		r.CDIKind = kind
		return r, nil
	}
	r.Glob, r.Access = sel, DefaultAccess
	if i := strings.LastIndexByte(sel, ':'); i >= 0 {
		r.Glob, r.Access = sel[:i], sel[i+1:]
		if !validAccess(r.Access) {
			return Resource{}, fmt.Errorf("%w: %q: access %q: want a subset of \"rwm\"", ErrBadResource, s, r.Access)
		}
	}
	if !path.IsAbs(r.Glob) || path.Clean(r.Glob) != r.Glob {
		return Resource{}, fmt.Errorf("%w: %q: %q is not a clean absolute path pattern", ErrBadResource, s, r.Glob)
	}
	if _, err := path.Match(r.Glob, ""); err != nil {
		return Resource{}, fmt.Errorf("%w: %q: %w", ErrBadResource, s, err)
	}
	return r, nil
}

// ParseResources parses every declaration and refuses a name given twice.
func ParseResources(list []string) ([]Resource, error) {
	out := make([]Resource, 0, len(list))
	seen := map[string]bool{}
	for _, s := range list {
		r, err := ParseResource(s)
		if err != nil {
			return nil, err
		}
		if seen[r.Name] {
			return nil, fmt.Errorf("%w: %s declared twice", ErrBadResource, r.Name)
		}
		seen[r.Name] = true
		out = append(out, r)
	}
	return out, nil
}

// CheckName returns why name is not an extended resource name a node may
// declare (nil if it is): "domain/name", the domain not kubernetes.io
// nor one of its subdomains.
func CheckName(name string) error {
	domain, local, ok := strings.Cut(name, "/")
	switch {
	case !ok || domain == "" || local == "" || strings.Contains(local, "/"):
		return fmt.Errorf("resource name %q: want DOMAIN/NAME", name)
	case domain == "kubernetes.io" || strings.HasSuffix(domain, ".kubernetes.io"):
		return fmt.Errorf("resource name %q: the kubernetes.io domain is Kubernetes' own", name)
	case len(local) > 63:
		return fmt.Errorf("resource name %q: the name after the domain is longer than 63 characters", name)
	}
	for _, c := range domain + local {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return fmt.Errorf("resource name %q: character %q", name, c)
		}
	}
	return nil
}

// checkKind checks a CDI kind, "vendor.com/class".
func checkKind(kind string) error {
	vendor, class := parser.ParseQualifier(kind)
	if vendor == "" || class == "" {
		return fmt.Errorf("CDI kind %q: want VENDOR/CLASS", kind)
	}
	if err := parser.ValidateVendorName(vendor); err != nil {
		return fmt.Errorf("CDI kind %q: %w", kind, err)
	}
	if err := parser.ValidateClassName(class); err != nil {
		return fmt.Errorf("CDI kind %q: %w", kind, err)
	}
	return nil
}

// validAccess reports whether a is a non-empty subset of "rwm", each
// letter once.
func validAccess(a string) bool {
	if a == "" || len(a) > 3 {
		return false
	}
	for i, c := range a {
		if !strings.ContainsRune("rwm", c) || strings.ContainsRune(a[i+1:], c) {
			return false
		}
	}
	return true
}

func itoa(n int) string { return strconv.Itoa(n) }

// holds reports whether dev, a device node path or a CDI device's name, is
// a unit of r.
func (r Resource) holds(dev string) bool {
	if r.CDIKind != "" {
		return strings.HasPrefix(dev, r.CDIKind+"=")
	}
	ok, _ := path.Match(r.Glob, dev)
	return ok
}
