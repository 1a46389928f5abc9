package api

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"tug/internal/pod"
)

// conditionStatuses are the values of kube_node_status_condition's status
// label: one series each per condition, 1 for the condition's status and
// 0 for the others, as kube-state-metrics reports them.
var conditionStatuses = []string{"true", "false", "unknown"}

// stateCollector exports, at each scrape, the pod and node state a fleet
// alerts on under kube-state-metrics' names (the kubelet's own /metrics
// has no per-container restart count and no node condition): each
// container's restart count and waiting reason, from the StatusSource, and
// each node condition, from the NodeSource.
type stateCollector struct {
	s *Server

	restarts, initRestarts, waiting, condition *prometheus.Desc
}

func newStateCollector(s *Server) *stateCollector {
	ctr := []string{"namespace", "pod", "uid", "container"}
	return &stateCollector{
		s: s,
		restarts: prometheus.NewDesc("kube_pod_container_status_restarts_total",
			"The number of container restarts per container (the pod status' restartCount).", ctr, nil),
		initRestarts: prometheus.NewDesc("kube_pod_init_container_status_restarts_total",
			"The number of restarts for the init container (the pod status' restartCount).", ctr, nil),
		waiting: prometheus.NewDesc("kube_pod_container_status_waiting_reason",
			"1 while the container waits, with the reason it waits (CrashLoopBackOff, ErrImagePull, ...).", append(ctr, "reason"), nil),
		condition: prometheus.NewDesc("kube_node_status_condition",
			"The condition of the node (MemoryPressure, DiskPressure, PIDPressure, ClockBehind): 1 on the series of its status.", []string{"node", "condition", "status"}, nil),
	}
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.restarts, c.initRestarts, c.waiting, c.condition} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	for _, v := range c.s.pods() {
		m := v.Metadata
		for _, cs := range v.Status.ContainerStatuses {
			ch <- prometheus.MustNewConstMetric(c.restarts, prometheus.CounterValue, float64(cs.RestartCount), m.Namespace, m.Name, m.UID, cs.Name)
			if w := cs.State.Waiting; w != nil && w.Reason != "" {
				ch <- prometheus.MustNewConstMetric(c.waiting, prometheus.GaugeValue, 1, m.Namespace, m.Name, m.UID, cs.Name, w.Reason)
			}
		}
		for _, cs := range v.Status.InitContainerStatuses {
			ch <- prometheus.MustNewConstMetric(c.initRestarts, prometheus.CounterValue, float64(cs.RestartCount), m.Namespace, m.Name, m.UID, cs.Name)
		}
	}
	if c.s.Node == nil {
		return
	}
	n := c.s.Node.Node()
	for _, cond := range n.Status.Conditions {
		c.collectCondition(ch, n.Metadata.Name, cond)
	}
}

// collectCondition sends the three series of one condition; a status
// other than True or False counts as unknown.
func (c *stateCollector) collectCondition(ch chan<- prometheus.Metric, node string, cond pod.NodeCondition) {
	status := strings.ToLower(cond.Status)
	if status != "true" && status != "false" {
		status = "unknown"
	}
	for _, s := range conditionStatuses {
		v := 0.0
		if s == status {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(c.condition, prometheus.GaugeValue, v, node, cond.Type, s)
	}
}
