package cli

import (
	"bytes"
	"testing"
	"time"

	"tug/internal/api"
)

func TestFormatCores(t *testing.T) {
	tests := []struct {
		cores float64
		want  string
	}{
		{0, "0m"},
		{-0.5, "0m"},
		{0.0000001, "1m"},
		{0.012, "12m"},
		{0.0121, "13m"},
		{1, "1000m"},
		{1.5, "1500m"},
	}
	for _, tt := range tests {
		if got := formatCores(tt.cores); got != tt.want {
			t.Errorf("formatCores(%v) = %q, want %q", tt.cores, got, tt.want)
		}
	}
}

func TestFormatMemory(t *testing.T) {
	tests := []struct {
		bytes uint64
		want  string
	}{
		{0, "0Mi"},
		{1<<20 - 1, "0Mi"},
		{5 << 20, "5Mi"},
		{5<<20 + 1<<19, "5Mi"},
		{3 << 30, "3072Mi"},
	}
	for _, tt := range tests {
		if got := formatMemory(tt.bytes); got != tt.want {
			t.Errorf("formatMemory(%d) = %q, want %q", tt.bytes, got, tt.want)
		}
	}
}

func TestTopUsage(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Second)
	started := t0.Add(-time.Hour)
	restarted := t0.Add(500 * time.Millisecond)
	ctr := func(name string, start, at time.Time, cpuNs, ws uint64) api.ContainerStats {
		return api.ContainerStats{Name: name, StartTime: start, CPU: api.CPUStats{Time: at, UsageCoreNanoSeconds: cpuNs},
			Memory: api.MemoryStats{Time: at, WorkingSetBytes: ws}}
	}
	web := api.PodReference{Name: "web-e", Namespace: "default", UID: "u-web"}
	dns := api.PodReference{Name: "dns-e", Namespace: "kube-system", UID: "u-dns"}
	before := api.StatsSummary{Pods: []api.PodStats{
		{PodRef: web, Containers: []api.ContainerStats{ctr("main", started, t0, 10e9, 0), ctr("side", started, t0, 1e9, 0)}},
		{PodRef: dns, Containers: []api.ContainerStats{ctr("dns", started, t0, 5e9, 0)}},
	}}
	after := api.StatsSummary{Pods: []api.PodStats{
		{PodRef: web, Containers: []api.ContainerStats{
			ctr("main", started, t1, 10e9+1e9, 5<<20),                  // a full core over the second
			ctr("side", restarted, t1, 0.25e9, 1<<20),                  // started again half a second in
			ctr("new", t0.Add(750*time.Millisecond), t1, 0.1e9, 2<<20), // not there before
		}},
		{PodRef: dns, Containers: []api.ContainerStats{ctr("dns", started, t1, 5e9+12e6, 30<<20)}},
		{PodRef: api.PodReference{Name: "idle-e", Namespace: "default", UID: "u-idle"}}, // no running container
	}}
	all := topUsageOf(before, after, func(api.PodStats) bool { return true })
	var out bytes.Buffer
	if err := writeTop(&out, all, false, true, false); err != nil {
		t.Fatal(err)
	}
	want := `NAMESPACE     NAME    CPU(cores)   MEMORY(bytes)
default       web-e   1900m        8Mi
kube-system   dns-e   12m          30Mi
`
	if out.String() != want {
		t.Errorf("pods:\n%s\nwant:\n%s", out.String(), want)
	}
	out.Reset()
	onlyWeb := topUsageOf(before, after, func(p api.PodStats) bool { return p.PodRef.UID == "u-web" })
	if err := writeTop(&out, onlyWeb, true, false, false); err != nil {
		t.Fatal(err)
	}
	want = `POD     NAME   CPU(cores)   MEMORY(bytes)
web-e   main   1000m        5Mi
web-e   side   500m         1Mi
web-e   new    400m         2Mi
`
	if out.String() != want {
		t.Errorf("--containers:\n%s\nwant:\n%s", out.String(), want)
	}
}
