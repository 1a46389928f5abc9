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
	// pod's full UID follows. The prefix keeps other software's aliased
	// links out of List.
	aliasPrefix = "tug-pod:"
	// podIfName is the name of the pod's end of its veth pair.
	podIfName = "eth0"
	// maxUIDLen bounds a UID so that it fits a link alias (255 bytes) and
	// a rule comment (nftables user data, 255 bytes) with room to spare.
	maxUIDLen = 128
)

// vethName returns the name of the host end veth of the pod with the given
// UID: "veth" and the first 11 hex digits of the UID's SHA-256.
func vethName(uid string) string {
	sum := sha256.Sum256([]byte(uid))
	return vethPrefix + hex.EncodeToString(sum[:])[:vethHashLen]
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

// vethAlias returns the alias tug gives the host end veth of a pod.
func vethAlias(uid string) string { return aliasPrefix + uid }

// uidFromAlias returns the UID in a link alias written by vethAlias.
func uidFromAlias(alias string) (string, bool) {
	uid, ok := strings.CutPrefix(alias, aliasPrefix)
	return uid, ok && checkUID(uid) == nil
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
