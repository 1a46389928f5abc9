// Package network owns a pod's sandbox namespaces and its place on the pod
// network.
//
// Namespaces creates the network, IPC and UTS namespaces of each pod and
// pins them with bind mounts under <run-dir>/ns/<uid>/, so that the pod's
// containers join them by path and no pause container is needed.
//
// Pods connects a pod's pinned network namespace to the node: a Linux
// bridge holding the gateway address, one veth pair per pod, host-local
// IPAM whose leases live on disk (one file per address), and an nftables
// table of tug's own for outbound masquerade and hostPort DNAT. Everything
// goes through netlink; no ip, nft or iptables binary is run.
//
// Several tugs may share one network namespace. Each is an instance (its
// containerd namespace) and marks what it creates there: its nftables
// table ("tug" for the default instance, "tug-<instance>" otherwise), its
// veths' names and aliases, its bridge's alias. It lists, adopts and
// removes only its own; leases and namespace pins live in its own
// directories. Objects with no instance mark (made before instances were
// told apart) are the default instance's. Every instance's bridge is in
// interface group bridgeGroup, so that the forward chain of the one that
// turned IPv4 forwarding on routes the others' pods too.
//
// It imports pod, github.com/vishvananda/netlink and netns,
// github.com/google/nftables, golang.org/x/sys/unix and the standard
// library; never reconcile, podruntime or qos.
package network
