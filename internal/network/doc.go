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
// It imports pod, github.com/vishvananda/netlink and netns,
// github.com/google/nftables, golang.org/x/sys/unix and the standard
// library; never reconcile, podruntime or qos.
package network
