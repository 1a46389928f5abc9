package cli

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"tug/internal/api"
	"tug/internal/cli/cmdflag"
)

const topUsage = `usage: tug top [--containers] [-n NAMESPACE | -A] [-o wide|json|yaml|name] [--no-headers] [--socket PATH] [POD]

Shows the CPU and memory of the pods' running containers, like "kubectl top
pod": NAME, CPU(cores) in millicores ("12m") and MEMORY(bytes) in MiB
("5Mi", the working set, what tug evicts on), every namespace unless -n is
given (with a NAMESPACE column when some pod is outside "default"), or only
POD (in namespace -n, default "default"). --containers prints a row per
container. CPU is the average over the second tug top takes to measure it.

`

// topWindow is how long tug top measures CPU over. The agent serves the
// cgroups' cumulative CPU time, not a rate (GET /stats/summary): a rate
// needs two readings, and an agent that kept readings to serve one would
// read every container's cgroup all the time on a small device for a
// command run now and then. So the client reads twice and divides; a
// second is what "kubectl top" users expect to wait and long enough that
// a busy loop reads as its full core.
const topWindow = time.Second

// topCmd is "tug top". It returns the exit code: 1 when tug cannot be asked
// or POD has no running container, 2 for a usage error.
func (e Env) topCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := cmdflag.New("top")
	socket := fs.String("socket", e.Socket, "`path` of tug's API socket")
	var ns string
	fs.StringVarP(&ns, "namespace", "n", "", "only this `namespace`'s pods (default: every namespace; \"default\" for POD)")
	all := allNamespacesFlag(fs)
	containers := fs.Bool("containers", false, "a row per container")
	out := outputFlags(fs, formatTable)
	pos, code, ok := cmdflag.Parse(fs, args, topUsage, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) > 1 {
		return cmdflag.UsageError(stderr, topUsage, "tug top takes at most one pod name")
	}
	if err := out.check(); err != nil {
		return cmdflag.UsageError(stderr, topUsage, err.Error())
	}
	if *all {
		ns = ""
	}
	c := &api.Client{SocketPath: *socket}
	keep := func(p api.PodStats) bool { return ns == "" || p.PodRef.Namespace == ns }
	var name string
	if len(pos) == 1 {
		if ns == "" {
			ns = "default"
		}
		v, err := c.Pod(ctx, ns, pos[0])
		if err != nil {
			fmt.Fprintln(stderr, "tug:", err)
			return 1
		}
		name = v.Metadata.Namespace + "/" + v.Metadata.Name
		keep = func(p api.PodStats) bool { return p.PodRef.UID == v.Metadata.UID }
	}

	before, err := c.StatsSummary(ctx)
	if err == nil {
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-time.After(topWindow):
		}
	}
	var after api.StatsSummary
	if err == nil {
		after, err = c.StatsSummary(ctx)
	}
	if err != nil {
		fmt.Fprintln(stderr, "tug:", err)
		return 1
	}
	pods := topUsageOf(before, after, keep)
	if len(pods) == 0 {
		if name != "" {
			fmt.Fprintf(stderr, "tug: no usage for pod %s: none of its containers runs\n", name)
			return 1
		}
		fmt.Fprintln(stderr, "No pods with a running container.")
		return 0
	}
	namespaceColumn := len(pos) == 0 && ns == ""
	if namespaceColumn {
		namespaceColumn = false
		for _, p := range pods {
			if p.namespace != "default" {
				namespaceColumn = true
			}
		}
	}
	switch out.format {
	case formatJSON, formatYAML:
		err = writeTopObjects(stdout, pods, out.format)
	case formatName:
		var b strings.Builder
		for _, p := range pods {
			b.WriteString("pod/" + p.name + "\n")
		}
		err = writeEscaped(stdout, b.String())
	default:
		err = writeTop(stdout, pods, *containers || out.format == formatWide, namespaceColumn, out.noHeaders)
	}
	if err != nil {
		fmt.Fprintln(stderr, "tug:", err)
		return 1
	}
	return 0
}

// topPod is one pod's usage.
type topPod struct {
	namespace, name string
	containers      []topContainer
}

// topContainer is one container's usage: CPU in cores, memory (working
// set) in bytes.
type topContainer struct {
	name   string
	cores  float64
	memory uint64
}

// topUsageOf is the usage of the pods keep selects, from two summaries
// (in after's order): a container's CPU is its CPU time between the two
// readings over the time between them. A container absent from before, or
// started again since (another start time, or less CPU time), counts its
// CPU time since it started over its life.
func topUsageOf(before, after api.StatsSummary, keep func(api.PodStats) bool) []topPod {
	type key struct{ uid, name string }
	earlier := map[key]api.ContainerStats{}
	for _, p := range before.Pods {
		for _, c := range p.Containers {
			earlier[key{p.PodRef.UID, c.Name}] = c
		}
	}
	var out []topPod
	for _, p := range after.Pods {
		if !keep(p) || len(p.Containers) == 0 {
			continue
		}
		tp := topPod{namespace: p.PodRef.Namespace, name: p.PodRef.Name}
		for _, c := range p.Containers {
			from, ok := earlier[key{p.PodRef.UID, c.Name}]
			if !ok || !from.StartTime.Equal(c.StartTime) || from.CPU.UsageCoreNanoSeconds > c.CPU.UsageCoreNanoSeconds {
				from = api.ContainerStats{CPU: api.CPUStats{Time: c.StartTime}}
			}
			var cores float64
			if d := c.CPU.Time.Sub(from.CPU.Time); d > 0 && !from.CPU.Time.IsZero() {
				cores = float64(c.CPU.UsageCoreNanoSeconds-from.CPU.UsageCoreNanoSeconds) / float64(d.Nanoseconds())
			}
			tp.containers = append(tp.containers, topContainer{name: c.Name, cores: cores, memory: c.Memory.WorkingSetBytes})
		}
		out = append(out, tp)
	}
	return out
}

// topObject is one pod's usage as -o json and -o yaml print it, in
// kubectl top's units.
type topObject struct {
	Namespace  string               `json:"namespace"`
	Name       string               `json:"name"`
	CPU        string               `json:"cpu"`
	Memory     string               `json:"memory"`
	Containers []topContainerObject `json:"containers"`
}

type topContainerObject struct {
	Name   string `json:"name"`
	CPU    string `json:"cpu"`
	Memory string `json:"memory"`
}

// writeTopObjects prints pods as a JSON or YAML list of topObject.
func writeTopObjects(w io.Writer, pods []topPod, format string) error {
	items := []topObject{}
	for _, p := range pods {
		o := topObject{Namespace: p.namespace, Name: p.name}
		var cores float64
		var memory uint64
		for _, c := range p.containers {
			cores += c.cores
			memory += c.memory
			o.Containers = append(o.Containers, topContainerObject{Name: c.name, CPU: formatCores(c.cores), Memory: formatMemory(c.memory)})
		}
		o.CPU, o.Memory = formatCores(cores), formatMemory(memory)
		items = append(items, o)
	}
	list := struct {
		Items []topObject `json:"items"`
	}{items}
	if format == formatJSON {
		return writeJSON(w, list)
	}
	return writeYAML(w, list)
}

// writeTop prints pods as "kubectl top pod" does (with containers, a row
// per container).
func writeTop(w io.Writer, pods []topPod, containers, namespaceColumn, noHeaders bool) error {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	if !noHeaders {
		if namespaceColumn {
			fmt.Fprint(tw, "NAMESPACE\t")
		}
		if containers {
			fmt.Fprint(tw, "POD\t")
		}
		fmt.Fprintln(tw, "NAME\tCPU(cores)\tMEMORY(bytes)")
	}
	for _, p := range pods {
		row := func(name string, cores float64, memory uint64) {
			if namespaceColumn {
				fmt.Fprint(tw, escape(p.namespace)+"\t")
			}
			if containers {
				fmt.Fprint(tw, escape(p.name)+"\t")
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", escape(name), formatCores(cores), formatMemory(memory))
		}
		if containers {
			for _, c := range p.containers {
				row(c.name, c.cores, c.memory)
			}
			continue
		}
		var cores float64
		var memory uint64
		for _, c := range p.containers {
			cores += c.cores
			memory += c.memory
		}
		row(p.name, cores, memory)
	}
	return tw.Flush()
}

// formatCores writes CPU cores in millicores as kubectl top does: rounded
// up ("12m"; any use at all is at least "1m").
func formatCores(cores float64) string {
	return fmt.Sprintf("%dm", int64(math.Ceil(max(cores, 0)*1000-1e-9)))
}

// formatMemory writes bytes in whole MiB as kubectl top does, rounded down
// ("5Mi").
func formatMemory(b uint64) string {
	return fmt.Sprintf("%dMi", b/(1<<20))
}
