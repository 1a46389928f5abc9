// Package prober runs the probes of the containers of tug's pods, with the
// kubelet's semantics: the handlers (exec, httpGet, tcpSocket, grpc; also
// used by the lifecycle hooks), one worker per container and probe kind,
// the results they record and the metrics prober_probe_total and
// prober_probe_duration_seconds.
//
// Network probes are made by tug itself from inside the pod's network
// namespace, so they need nothing in the image and reach listeners on
// localhost and on the pod's IP alike; exec probes go through an Execer
// (containerd exec, in podruntime) with the timeout enforced.
package prober
