package podruntime

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/containerd/containerd/api/types/runc/options"
	containerd "github.com/containerd/containerd/v2/client"

	"tug/internal/pod"
)

// RuntimeClass is what a runtime class name of the node stands for: the
// containerd runtime (shim) its pods' containers are created with and, for
// the runc shim, the OCI runtime binary the shim runs instead of runc, as
// containerd's CRI does for a runtime handler's BinaryName.
type RuntimeClass struct {
	// Name is the class, as a pod's spec.runtimeClassName names it.
	Name string
	// Type is the containerd runtime, io.containerd.<shim>.v<N>.
	Type string
	// BinaryName is the absolute path of the OCI runtime binary the runc
	// shim runs ("": the shim's default, runc). Only with RuncRuntime.
	BinaryName string
}

// RuncRuntime is containerd's runc shim v2: the runtime of a pod without a
// runtime class, and the only one whose binary a class may name.
const RuncRuntime = "io.containerd.runc.v2"

// runtimeType is the form of a containerd runtime (shim) name.
var runtimeType = regexp.MustCompile(`^io\.containerd\.[a-z0-9][a-z0-9_-]*\.v[0-9]+$`)

// ParseRuntimeClasses parses --runtime-class values, each
// NAME=RUNTIME_TYPE[:BINARY]: NAME a DNS subdomain, RUNTIME_TYPE a
// containerd runtime (io.containerd.<shim>.v<N>) and BINARY, for
// io.containerd.runc.v2 only, the absolute path of the OCI runtime binary
// the shim runs. A name given twice is an error. The binaries are not
// looked at: see Check.
func ParseRuntimeClasses(values []string) (map[string]RuntimeClass, error) {
	out := make(map[string]RuntimeClass, len(values))
	var errs []error
	for _, v := range values {
		rc, err := parseRuntimeClass(v)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if _, dup := out[rc.Name]; dup {
			errs = append(errs, fmt.Errorf("%w: %q: runtime class %q is declared twice", ErrRuntimeClass, v, rc.Name))
			continue
		}
		out[rc.Name] = rc
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

func parseRuntimeClass(v string) (RuntimeClass, error) {
	name, rest, ok := strings.Cut(v, "=")
	if !ok {
		return RuntimeClass{}, fmt.Errorf("%w: %q: want NAME=RUNTIME_TYPE[:BINARY]", ErrRuntimeClass, v)
	}
	typ, bin, _ := strings.Cut(rest, ":")
	rc := RuntimeClass{Name: name, Type: typ, BinaryName: bin}
	switch {
	case !pod.IsDNS1123Subdomain(name):
		return rc, fmt.Errorf("%w: %q: name %q %s", ErrRuntimeClass, v, name, pod.DNS1123SubdomainMsg)
	case !runtimeType.MatchString(typ):
		return rc, fmt.Errorf("%w: %q: runtime type %q is not a containerd runtime name (io.containerd.<shim>.v<N>, e.g. %s)", ErrRuntimeClass, v, typ, RuncRuntime)
	case strings.Contains(rest, ":") && bin == "":
		return rc, fmt.Errorf("%w: %q: empty binary after ':'", ErrRuntimeClass, v)
	case bin != "" && typ != RuncRuntime:
		return rc, fmt.Errorf("%w: %q: a binary is given to the %s shim only, not to %s", ErrRuntimeClass, v, RuncRuntime, typ)
	case bin != "" && (!filepath.IsAbs(bin) || filepath.Clean(bin) != bin):
		return rc, fmt.Errorf("%w: %q: binary %q must be a clean absolute path", ErrRuntimeClass, v, bin)
	}
	return rc, nil
}

// Check returns an error when rc names a binary that is not an executable
// regular file (symlinks followed, as the shim will).
func (rc RuntimeClass) Check() error {
	if rc.BinaryName == "" {
		return nil
	}
	fi, err := os.Stat(rc.BinaryName)
	switch {
	case err != nil:
		return fmt.Errorf("%w: runtime class %q: %w", ErrRuntimeClass, rc.Name, err)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%w: runtime class %q: %s is not a regular file", ErrRuntimeClass, rc.Name, rc.BinaryName)
	case fi.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("%w: runtime class %q: %s is not executable: %w", ErrRuntimeClass, rc.Name, rc.BinaryName, fs.ErrPermission)
	}
	return nil
}

// String is the class as --runtime-class writes it.
func (rc RuntimeClass) String() string {
	if rc.BinaryName == "" {
		return rc.Name + "=" + rc.Type
	}
	return rc.Name + "=" + rc.Type + ":" + rc.BinaryName
}

// runtimeFor returns the runtime of pod p's containers: RuncRuntime
// without a runtime class, else the class's (ErrRuntimeClassNotDeclared
// when the node does not declare it).
func (r *Runtime) runtimeFor(p *pod.Pod) (RuntimeClass, error) {
	name := p.Spec.RuntimeClass()
	if name == "" {
		return RuntimeClass{Type: RuncRuntime}, nil
	}
	rc, ok := r.cfg.RuntimeClasses[name]
	if !ok {
		return RuntimeClass{}, fmt.Errorf("%w: %q", ErrRuntimeClassNotDeclared, name)
	}
	return rc, nil
}

// withRuntime creates a container with rc's runtime; the runc shim gets
// rc's binary as its BinaryName option, which containerd hands the shim
// when the task is created (tug gives no task options of its own).
func withRuntime(rc RuntimeClass) containerd.NewContainerOpts {
	if rc.BinaryName == "" {
		return containerd.WithRuntime(rc.Type, nil)
	}
	return containerd.WithRuntime(rc.Type, &options.Options{BinaryName: rc.BinaryName})
}
