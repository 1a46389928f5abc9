package cgstats

import (
	"log/slog"
	"path"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"tug/internal/pod"
)

// containerLister lists tug's containers as last seen (pleg.PLEG).
type containerLister interface {
	All() []pod.RuntimeContainer
}

// statReader reads one cgroup (Reader).
type statReader interface {
	Read(group string) (Stats, error)
}

// states are the container states kubelet_running_containers always
// reports, as the kubelet does.
var states = []pod.RunState{pod.RunCreated, pod.RunRunning, pod.RunExited, pod.RunUnknown}

// Collector exports, at each scrape, the running pod and container counts
// of the PLEG's cache and the usage of each running container's cgroup.
// A container whose cgroup cannot be read is left out (logged once per
// container).
type Collector struct {
	containers containerLister
	reader     statReader
	log        *slog.Logger

	runningPods, runningContainers           *prometheus.Desc
	cpu, workingSet, rss, memUsage, oomKills *prometheus.Desc

	mu     sync.Mutex
	failed map[string]bool // container IDs whose failure was logged
}

// NewCollector returns a Collector over containers and reader, and
// registers it on reg (nil: not registered). log may be nil.
func NewCollector(containers containerLister, reader statReader, reg prometheus.Registerer, log *slog.Logger) *Collector {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	labels := []string{"namespace", "pod", "container", "id", "image"}
	c := &Collector{
		containers:        containers,
		reader:            reader,
		log:               log,
		runningPods:       prometheus.NewDesc("kubelet_running_pods", "Number of pods that have a running container.", nil, nil),
		runningContainers: prometheus.NewDesc("kubelet_running_containers", "Number of containers, by state.", []string{"container_state"}, nil),
		cpu:               prometheus.NewDesc("container_cpu_usage_seconds_total", "Cumulative CPU time consumed in seconds.", labels, nil),
		workingSet:        prometheus.NewDesc("container_memory_working_set_bytes", "Current working set in bytes.", labels, nil),
		rss:               prometheus.NewDesc("container_memory_rss", "Size of RSS in bytes.", labels, nil),
		memUsage:          prometheus.NewDesc("container_memory_usage_bytes", "Current memory usage in bytes, including all memory regardless of when it was accessed.", labels, nil),
		oomKills:          prometheus.NewDesc("container_oom_events_total", "Count of out of memory events observed for the container.", labels, nil),
		failed:            map[string]bool{},
	}
	if reg != nil {
		reg.MustRegister(c)
	}
	return c
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.runningPods, c.runningContainers, c.cpu, c.workingSet, c.rss, c.memUsage, c.oomKills} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	all := c.containers.All()
	byState := map[pod.RunState]int{}
	pods := map[string]bool{}
	seen := map[string]bool{}
	for _, rc := range all {
		byState[rc.State]++
		if rc.State != pod.RunRunning {
			continue
		}
		pods[rc.PodUID] = true
		if rc.CgroupParent == "" {
			continue
		}
		seen[rc.ID] = true
		st, err := c.reader.Read(path.Join(rc.CgroupParent, rc.ID))
		if err != nil {
			c.logFailure(rc, err)
			continue
		}
		c.clearFailure(rc.ID)
		lv := []string{rc.Namespace, rc.PodName, rc.Name, rc.ID, rc.Image}
		ch <- prometheus.MustNewConstMetric(c.cpu, prometheus.CounterValue, st.CPUSeconds, lv...)
		ch <- prometheus.MustNewConstMetric(c.workingSet, prometheus.GaugeValue, float64(st.WorkingSet), lv...)
		ch <- prometheus.MustNewConstMetric(c.rss, prometheus.GaugeValue, float64(st.RSS), lv...)
		ch <- prometheus.MustNewConstMetric(c.memUsage, prometheus.GaugeValue, float64(st.Usage), lv...)
		ch <- prometheus.MustNewConstMetric(c.oomKills, prometheus.CounterValue, float64(st.OOMKills), lv...)
	}
	ch <- prometheus.MustNewConstMetric(c.runningPods, prometheus.GaugeValue, float64(len(pods)))
	for _, s := range states {
		ch <- prometheus.MustNewConstMetric(c.runningContainers, prometheus.GaugeValue, float64(byState[s]), string(s))
	}
	c.mu.Lock()
	for id := range c.failed {
		if !seen[id] {
			delete(c.failed, id)
		}
	}
	c.mu.Unlock()
}

func (c *Collector) logFailure(rc pod.RuntimeContainer, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.failed[rc.ID] {
		c.failed[rc.ID] = true
		c.log.Warn("cannot read the container's cgroup stats", "pod", rc.Namespace+"/"+rc.PodName, "uid", rc.PodUID, "container", rc.Name, "err", err)
	}
}

func (c *Collector) clearFailure(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.failed, id)
}
