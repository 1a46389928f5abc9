package network

import "errors"

var (
	// ErrNoAddress is returned (wrapped, with the pod and the CIDR) by
	// Pods.SetUp when every address of the pod CIDR is leased. Other pods
	// are not affected; the pod can be set up once an address is released.
	ErrNoAddress = errors.New("network: no free address")
	// ErrInvalidConfig is returned (wrapped) by New for a Config it cannot
	// use (an IPv6 or too small CIDR, a bad bridge name, no state dir).
	ErrInvalidConfig = errors.New("network: invalid config")
	// ErrInvalidUID is returned (wrapped) for a pod UID that cannot name a
	// lease, a link alias or a rule comment (empty, too long, or with
	// characters other than letters, digits, '-', '_' and '.').
	ErrInvalidUID = errors.New("network: invalid pod uid")
	// ErrNameClash is returned (wrapped) by Pods.SetUp when the host end
	// veth name derived from the pod's UID belongs to another pod's link
	// (two UIDs whose hashes share 44 bits). tug never deletes such a link.
	ErrNameClash = errors.New("network: veth name already used by another pod")
	// ErrBridgeInUse is returned (wrapped) by Init and SetUp when the
	// configured bridge's alias says that another tug instance (another
	// containerd namespace) uses it.
	ErrBridgeInUse = errors.New("network: bridge used by another tug instance")
)
