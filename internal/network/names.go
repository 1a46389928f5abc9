package network

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"strings"
)

const (
	// vethPrefix starts the name of every host end veth tug creates.
	vethPrefix = "veth"
	// vethHashLen is how many hex digits of the UID's hash follow the
	// prefix: 4+11 = 15, the kernel's limit (IFNAMSIZ-1).
	vethHashLen = 11
	// aliasPrefix starts the alias (IFLA_IFALIAS) of a host end veth; the
	// instance (unless it is the default one), a ':' and the pod's full UID
	// follow. The prefix keeps other software's aliased links out of List.
	aliasPrefix = "tug-pod:"
	// bridgeAliasPrefix starts the alias of the bridge; the instance
	// follows. It tells an instance that the bridge is another one's.
	bridgeAliasPrefix = "tug-bridge:"
	// podIfName is the name of the pod's end of its veth pair.
	podIfName = "eth0"
	// maxUIDLen bounds a UID so that it fits a link alias (255 bytes) and
	// a rule comment (nftables user data, 255 bytes) with room to spare.
	maxUIDLen = 128
	// maxInstanceLen bounds an instance name so that an alias
	// ("tug-pod:<instance>:<uid>") stays within 255 bytes.
	maxInstanceLen = 100
)

// DefaultInstance is the instance of a tug on the default containerd
// namespace ("tug"; config's default). Its objects have the names every
// tug gave them before instances were told apart (table "tug", alias
// "tug-pod:<uid>", veth "veth<hash of the uid>"), so that an upgraded tug
// adopts, and cleans up, what the previous version left.
const DefaultInstance = "tug"

// instance is the identity a tug puts on everything it creates in the
// node's network namespace (Config.Instance: the containerd namespace):
// the nftables table, the veths' names and aliases, the bridge's alias.
// Two instances with different names list, adopt and remove only their
// own objects. What lives in an instance's own directories (leases under
// the state dir, namespace pins under the run dir) or under its own cgroup
// root needs no mark: the directory is the identity.
type instance string

// isDefault reports whether in is the default instance (or unset).
func (in instance) isDefault() bool { return in == "" || in == DefaultInstance }

// table returns the name of the instance's nftables table: "tug" for the
// default instance, "tug-<instance>" otherwise.
func (in instance) table() string {
	if in.isDefault() {
		return tableName
	}
	return tableName + "-" + string(in)
}

// vethName returns the name of the host end veth of the pod with the given
// UID: "veth" and the first 11 hex digits of the SHA-256 of the UID (of
// the instance, a NUL and the UID for an instance other than the
// default), so that two instances running the same manifest never want
// the same name.
func (in instance) vethName(uid string) string {
	key := uid
	if !in.isDefault() {
		key = string(in) + "\x00" + uid
	}
	sum := sha256.Sum256([]byte(key))
	return vethPrefix + hex.EncodeToString(sum[:])[:vethHashLen]
}

// alias returns the alias tug gives the host end veth of a pod:
// "tug-pod:<uid>" for the default instance, "tug-pod:<instance>:<uid>"
// otherwise. A UID never holds a ':', so neither form is the other's.
func (in instance) alias(uid string) string {
	if in.isDefault() {
		return aliasPrefix + uid
	}
	return aliasPrefix + string(in) + ":" + uid
}

// uidFromAlias returns the UID in a link alias that alias wrote for this
// instance; another instance's alias is not one.
func (in instance) uidFromAlias(alias string) (string, bool) {
	rest, ok := strings.CutPrefix(alias, aliasPrefix)
	if ok && !in.isDefault() {
		rest, ok = strings.CutPrefix(rest, string(in)+":")
	}
	return rest, ok && checkUID(rest) == nil
}

// bridgeAlias returns the alias tug gives the bridge it uses.
func (in instance) bridgeAlias() string {
	if in.isDefault() {
		return bridgeAliasPrefix + DefaultInstance
	}
	return bridgeAliasPrefix + string(in)
}

// checkInstance checks that name can be an instance: what a containerd
// namespace may be ([A-Za-z0-9] words joined by '.', '_' or '-'), short
// enough for an alias.
func checkInstance(name string) error {
	if name == "" {
		return nil // the default
	}
	if len(name) > maxInstanceLen {
		return fmt.Errorf("%w: instance %q: at most %d characters", ErrInvalidConfig, name, maxInstanceLen)
	}
	prevSep := true
	for i, c := range name {
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		sep := c == '-' || c == '_' || c == '.'
		if !alnum && !sep || sep && (prevSep || i == len(name)-1) {
			return fmt.Errorf("%w: instance %q: letters and digits, joined by single '.', '_' or '-'", ErrInvalidConfig, name)
		}
		prevSep = sep
	}
	return nil
}

// podMAC returns the MAC of the pod's eth0: locally administered, unicast,
// from the UID's hash. A veth made again for the same pod (after a crash,
// or a new netns for the same UID) keeps its MAC, so the node's and other
// pods' ARP caches, which still map the pod's address to it, stay right.
func podMAC(uid string) net.HardwareAddr {
	sum := sha256.Sum256([]byte("tug pod mac " + uid))
	mac := net.HardwareAddr(sum[:6])
	mac[0] = mac[0]&^0x01 | 0x02
	return mac
}

// checkUID checks that uid can name a lease, an alias and a rule comment.
func checkUID(uid string) error {
	if uid == "" || len(uid) > maxUIDLen {
		return fmt.Errorf("%w: %q: must have 1 to %d characters", ErrInvalidUID, uid, maxUIDLen)
	}
	for _, c := range uid {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
		default:
			return fmt.Errorf("%w: %q: character %q", ErrInvalidUID, uid, c)
		}
	}
	if uid == "." || uid == ".." {
		return fmt.Errorf("%w: %q", ErrInvalidUID, uid)
	}
	return nil
}
