package specopts

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"

	"tug/internal/pod"
)

// AppArmorDefaultProfile is the profile of appArmorProfile RuntimeDefault,
// loaded under this name on first use.
const AppArmorDefaultProfile = "tug-default"

// withAppArmor applies the container's appArmorProfile (the pod's by
// default) when the kernel enforces AppArmor: RuntimeDefault loads and
// applies AppArmorDefaultProfile, Unconfined applies "unconfined", Localhost
// the named profile, which must be loaded on the node. Without AppArmor, or
// without a profile, nothing is set.
func withAppArmor(sc *pod.SecurityContext, enabled bool) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if !enabled || sc == nil || sc.AppArmorProfile == nil {
			return nil
		}
		var profile string
		switch ap := sc.AppArmorProfile; ap.Type {
		case pod.AppArmorRuntimeDefault:
			if err := loadDefaultProfile(AppArmorDefaultProfile); err != nil {
				return err
			}
			profile = AppArmorDefaultProfile
		case pod.AppArmorUnconfined:
			profile = "unconfined"
		case pod.AppArmorLocalhost:
			if ap.LocalhostProfile == nil {
				return nil
			}
			profile = *ap.LocalhostProfile
		default:
			return nil
		}
		if s.Process == nil {
			return nil
		}
		s.Process.ApparmorProfile = profile
		return nil
	}
}

// loadDefaultProfile loads the runtime's default profile under name with
// apparmor_parser, unless the kernel has it already.
func loadDefaultProfile(name string) error {
	loaded, err := os.ReadFile("/sys/kernel/security/apparmor/profiles")
	if err != nil {
		return fmt.Errorf("apparmor: loaded profiles: %w", err)
	}
	for _, line := range strings.Split(string(loaded), "\n") {
		if n, _, _ := strings.Cut(line, " "); n == name {
			return nil
		}
	}
	current, _ := os.ReadFile("/proc/self/attr/current") // tug's own profile, if confined
	text := defaultProfile(name, peerName(string(current)), exists)
	cmd := exec.Command("apparmor_parser", "--replace", "--skip-cache")
	cmd.Stdin = strings.NewReader(text)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("apparmor: load profile %s: %w: %s", name, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// peerName is a profile name from /proc/PID/attr/current ("name (enforce)"),
// "unconfined" when there is none.
func peerName(current string) string {
	name, _, _ := strings.Cut(strings.TrimSpace(current), " ")
	if name == "" {
		return "unconfined"
	}
	return name
}

// exists says whether an include of the system's AppArmor policy exists.
func exists(include string) bool {
	_, err := os.Stat("/etc/apparmor.d/" + include)
	return err == nil
}

// defaultProfile is the text of the runtime's default AppArmor profile, the
// policy Docker, containerd and CRI-O apply by default and a kubelet user
// expects of RuntimeDefault: files, network and capabilities as the
// container's other settings allow, but no mounts, no writes to the
// kernel's knobs in /proc and /sys, no reading of the kernel's memory, and
// signals only from the host's unconfined processes, the runtime, the agent
// (daemon) and the container itself. has says whether a system include
// exists (the ABI, the global tunables, the base abstraction); without the
// tunables, @{PROC} is defined here.
func defaultProfile(name, daemon string, has func(include string) bool) string {
	var b strings.Builder
	if has("abi/3.0") {
		b.WriteString("abi <abi/3.0>,\n")
	}
	if has("tunables/global") {
		b.WriteString("#include <tunables/global>\n")
	} else {
		b.WriteString("@{PROC}=/proc/\n")
	}
	fmt.Fprintf(&b, "\nprofile %s flags=(attach_disconnected,mediate_deleted) {\n", name)
	if has("abstractions/base") {
		b.WriteString("  #include <abstractions/base>\n")
	}
	rules := []string{
		"network,",
		"capability,",
		"file,",
		"umount,",
		"signal (receive) peer=unconfined,",
		"signal (receive) peer=runc,",
		"signal (receive) peer=crun,",
	}
	if daemon != "unconfined" {
		rules = append(rules, "signal (receive) peer="+daemon+",")
	}
	rules = append(rules,
		"signal (send,receive) peer="+name+",",
		// Writes directly below /proc, and anywhere but /proc/<pid>/ and
		// /proc/sys/kernel/shm*.
		"deny @{PROC}/* w,",
		"deny @{PROC}/{[^1-9/],[^1-9/][^0-9/],[^1-9s/][^0-9y/][^0-9s/],[^1-9/][^0-9/][^0-9/][^0-9/]*}/** w,",
		"deny @{PROC}/sys/[^k]** w,",
		"deny @{PROC}/sys/kernel/{?,??,[^s][^h][^m]**} w,",
		"deny @{PROC}/sysrq-trigger rwklx,",
		"deny @{PROC}/kcore rwklx,",
		"deny mount,",
		// Writes in /sys except the cgroup tree, and its secrets at all.
		"deny /sys/[^f]*/** wklx,",
		"deny /sys/f[^s]*/** wklx,",
		"deny /sys/fs/[^c]*/** wklx,",
		"deny /sys/fs/c[^g]*/** wklx,",
		"deny /sys/fs/cg[^r]*/** wklx,",
		"deny /sys/firmware/** rwklx,",
		"deny /sys/devices/virtual/powercap/** rwklx,",
		"deny /sys/kernel/security/** rwklx,",
		"ptrace (trace,tracedby,read,readby) peer="+name+",",
	)
	for _, r := range rules {
		b.WriteString("  " + r + "\n")
	}
	b.WriteString("}\n")
	return b.String()
}
