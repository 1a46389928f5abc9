package podvalidate

import "strings"

// linuxCapabilities are the Linux capability names (without "CAP_") that a
// securityContext may add or drop, up to Linux 6.x. The table is read-only.
var linuxCapabilities = map[string]bool{
	"CHOWN": true, "DAC_OVERRIDE": true, "DAC_READ_SEARCH": true, "FOWNER": true,
	"FSETID": true, "KILL": true, "SETGID": true, "SETUID": true, "SETPCAP": true,
	"LINUX_IMMUTABLE": true, "NET_BIND_SERVICE": true, "NET_BROADCAST": true,
	"NET_ADMIN": true, "NET_RAW": true, "IPC_LOCK": true, "IPC_OWNER": true,
	"SYS_MODULE": true, "SYS_RAWIO": true, "SYS_CHROOT": true, "SYS_PTRACE": true,
	"SYS_PACCT": true, "SYS_ADMIN": true, "SYS_BOOT": true, "SYS_NICE": true,
	"SYS_RESOURCE": true, "SYS_TIME": true, "SYS_TTY_CONFIG": true, "MKNOD": true,
	"LEASE": true, "AUDIT_WRITE": true, "AUDIT_CONTROL": true, "SETFCAP": true,
	"MAC_OVERRIDE": true, "MAC_ADMIN": true, "SYSLOG": true, "WAKE_ALARM": true,
	"BLOCK_SUSPEND": true, "AUDIT_READ": true, "PERFMON": true, "BPF": true,
	"CHECKPOINT_RESTORE": true,
}

// capabilityError checks a capability name as written in add or drop
// ("NET_ADMIN", "CAP_NET_ADMIN" or "ALL") and returns what is wrong with it,
// or "".
func capabilityError(name string) string {
	if n := strings.TrimPrefix(name, "CAP_"); n == "ALL" || linuxCapabilities[n] {
		return ""
	}
	if up := strings.TrimPrefix(strings.ToUpper(name), "CAP_"); up == "ALL" || linuxCapabilities[up] {
		return "capability names are upper case: " + up
	}
	return "unknown capability"
}
