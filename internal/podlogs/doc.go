// Package podlogs owns the CRI log layout of a pod's containers:
// <logs-dir>/<namespace>_<pod>_<uid>/<container>/<attempt>.log, rotated
// by size into <attempt>.log.N, in the CRI format that log shippers read
// (<RFC3339Nano> <stdout|stderr> <F|P> <text>). It writes the logs in two
// ways: Pumps converts the raw output files that containerd's shim writes
// (the "file" driver, exactly once across tug's kills, with the disk a
// container holds through its output bounded also while tug is down), and
// RunLogger is the body of the logger process the shim runs per container
// (the "binary" driver). With a JournalSender, Pumps also (or, for the
// "journald" driver, only) sends each line as a journal entry with
// podman's fields (journal.go), and JournalReader reads them back through
// journalctl. It also prunes old attempts, reads records back
// (ParseRecord) and lists the files an attempt holds on disk (Files).
//
// No containerd client and no journald client (the agent gives the
// sender): podruntime turns the paths of Pumps.Create into a task's IO,
// and gives Pumps the callbacks that ask containerd.
package podlogs
