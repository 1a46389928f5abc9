package eviction

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"

	"tug/internal/pod"
)

// statsFakes: a pod cgroup, the PLEG's containers and the disks, each
// recording what was read.
type statsFakes struct {
	podErr     error
	containers []pod.RuntimeContainer
	diskRead   []string // container IDs whose disk usage was read
	memRead    []string // container cgroups whose memory was read
}

func (f *statsFakes) PodUsage(*pod.Pod) (int64, int64, error) { return 100 << 20, 7, f.podErr }
func (f *statsFakes) PodContainers(string) []pod.RuntimeContainer {
	return f.containers
}
func (f *statsFakes) ContainerDiskUsage(_ context.Context, _ *pod.Pod, c pod.RuntimeContainer) (int64, int64, error) {
	f.diskRead = append(f.diskRead, c.ID)
	if c.ID == "broken" {
		return 0, 0, errors.New("snapshot gone")
	}
	return 1000, 10, nil
}
func (f *statsFakes) EmptyDirUsage(_, name string) (int64, int64, error) {
	if name == "gone" {
		return 0, 0, errors.New("no such directory")
	}
	return 500, 5, nil
}

// TestStatsReader: what is read when, and how it adds up.
func TestStatsReader(t *testing.T) {
	running := func(name, id string, attempt int) pod.RuntimeContainer {
		return pod.RuntimeContainer{Name: name, ID: id, Attempt: attempt, State: pod.RunRunning, CgroupParent: "/tug/podu"}
	}
	limited := pod.Container{Name: "a", Resources: pod.Resources{Limits: pod.ResourceList{pod.ResourceEphemeralStorage: pod.MustParseQuantity("1Gi")}}}
	p := func(containers []pod.Container, volumes ...pod.Volume) *pod.Pod {
		pp := &pod.Pod{}
		pp.Metadata.UID = "u"
		pp.Spec.Containers, pp.Spec.Volumes = containers, volumes
		return pp
	}
	disk := func(name string) pod.Volume { return pod.Volume{Name: name, EmptyDir: &pod.EmptyDirVolumeSource{}} }
	memory := pod.Volume{Name: "shm", EmptyDir: &pod.EmptyDirVolumeSource{Medium: pod.StorageMediumMemory}}
	tests := []struct {
		name       string
		pod        *pod.Pod
		containers []pod.RuntimeContainer
		pressure   string
		podErr     error
		want       PodStats
		wantOK     bool
		diskRead   []string
		memRead    []string
	}{
		{
			name:       "no pressure, no limit: the pod cgroup only",
			pod:        p([]pod.Container{{Name: "a"}}),
			containers: []pod.RuntimeContainer{running("a", "a0", 0)},
			want:       PodStats{Pod: Usage{Memory: 100 << 20, PIDs: 7}},
			wantOK:     true,
		},
		{
			name:       "an ephemeral-storage limit: that container's disk, latest attempt",
			pod:        p([]pod.Container{limited, {Name: "b"}}),
			containers: []pod.RuntimeContainer{running("a", "a0", 0), running("a", "a1", 1), running("b", "b0", 0)},
			want: PodStats{Pod: Usage{Memory: 100 << 20, PIDs: 7, Disk: 1000, Inodes: 10},
				Containers: map[string]Usage{"a": {Disk: 1000, Inodes: 10}}},
			wantOK:   true,
			diskRead: []string{"a1"},
		},
		{
			name: "DiskPressure: every container's disk (not init containers'), and disk-backed emptyDirs",
			pod:  p([]pod.Container{{Name: "a"}, {Name: "b"}}, disk("cache"), memory, disk("gone")),
			containers: []pod.RuntimeContainer{running("a", "a0", 0), running("b", "broken", 0),
				{Name: "setup", ID: "i0", Init: true}},
			pressure: DiskPressure,
			want: PodStats{Pod: Usage{Memory: 100 << 20, PIDs: 7, Disk: 1500, Inodes: 15},
				Containers: map[string]Usage{"a": {Disk: 1000, Inodes: 10}}, EmptyDirs: map[string]int64{"cache": 500}},
			wantOK:   true,
			diskRead: []string{"a0", "broken"},
		},
		{
			name:       "MemoryPressure: running containers' working sets",
			pod:        p([]pod.Container{{Name: "a"}, {Name: "b"}}),
			containers: []pod.RuntimeContainer{running("a", "a0", 0), {Name: "b", ID: "b0", State: pod.RunExited, CgroupParent: "/tug/podu"}},
			pressure:   MemoryPressure,
			want:       PodStats{Pod: Usage{Memory: 100 << 20, PIDs: 7}, Containers: map[string]Usage{"a": {Memory: 42}}},
			wantOK:     true,
			memRead:    []string{"/tug/podu/a0"},
		},
		{
			name:   "the pod cgroup unreadable and nothing else read: not ok",
			pod:    p([]pod.Container{{Name: "a"}}),
			podErr: errors.New("no cgroup"),
			want:   PodStats{Pod: Usage{Memory: 100 << 20, PIDs: 7}},
		},
		{
			name:   "the pod cgroup unreadable, an emptyDir read: ok",
			pod:    p(nil, disk("cache")),
			podErr: errors.New("no cgroup"),
			want:   PodStats{Pod: Usage{Memory: 100 << 20, PIDs: 7, Disk: 500, Inodes: 5}, EmptyDirs: map[string]int64{"cache": 500}},
			wantOK: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &statsFakes{podErr: tt.podErr, containers: tt.containers}
			r := StatsReader{Cgroups: f, Containers: f, Disks: f, EmptyDirs: f,
				ContainerMemory: func(group string) (int64, error) { f.memRead = append(f.memRead, group); return 42, nil },
				Pressure:        func(c string) bool { return c == tt.pressure }}
			got, ok := r.PodStats(t.Context(), tt.pod)
			if !reflect.DeepEqual(got, tt.want) || ok != tt.wantOK {
				t.Errorf("PodStats = %+v, %v; want %+v, %v", got, ok, tt.want, tt.wantOK)
			}
			slices.Sort(f.diskRead)
			if !slices.Equal(f.diskRead, tt.diskRead) {
				t.Errorf("disk read for %q, want %q", f.diskRead, tt.diskRead)
			}
			if !slices.Equal(f.memRead, tt.memRead) {
				t.Errorf("memory read for %q, want %q", f.memRead, tt.memRead)
			}
		})
	}
}
