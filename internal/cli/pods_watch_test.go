package cli

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"tug/internal/api"
	"tug/internal/podview"
)

func TestPodWatcher(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	fx := fixture(now)
	web, crash := fx.pods[0], fx.pods[1]
	sock := serveAPI(t, &fakeStatus{manifests: fx.manifests[1:2]}) // crash.yaml, no error
	olderWeb := web
	olderStart := now.Add(-6 * time.Hour)
	olderWeb.Status.StartTime = &olderStart // only AGE moves
	crashed := crash
	crashed.Status.ContainerStatuses = slices.Clone(crash.Status.ContainerStatuses)
	crashed.Status.ContainerStatuses[0].RestartCount = 5
	crashedLater := crashed
	crashedLater.Status.ContainerStatuses = slices.Clone(crashed.Status.ContainerStatuses)
	last := *crashed.Status.ContainerStatuses[0].LastTerminationState.Terminated
	last.FinishedAt = last.FinishedAt.Add(-time.Minute) // "(13m ago)": the clock, not a change
	crashedLater.Status.ContainerStatuses[0].LastTerminationState.Terminated = &last
	dns := fx.pods[3]

	ev := func(typ string, v podview.View) api.PodWatchEvent { return api.PodWatchEvent{Type: typ, Object: v} }
	bookmark := api.PodWatchEvent{Type: api.WatchBookmark}
	tests := []struct {
		name   string
		wide   bool
		events []api.PodWatchEvent
		want   string
	}{
		{
			name:   "table, then changed rows only",
			events: []api.PodWatchEvent{ev("ADDED", web), ev("ADDED", crash), bookmark, ev("MODIFIED", olderWeb), ev("MODIFIED", crashed), ev("MODIFIED", crashedLater), ev("DELETED", olderWeb)},
			want: `NAME          READY   STATUS             RESTARTS      AGE
crash-edge1   0/1     CrashLoopBackOff   4 (12m ago)   2d2h
web-edge1     1/1     Running            0             5h
crash-edge1   0/1     CrashLoopBackOff   5 (12m ago)   2d2h
web-edge1     1/1     Running            0             6h
`,
		},
		{
			name:   "no pods: the header comes with the first row",
			events: []api.PodWatchEvent{bookmark, ev("ADDED", web), ev("MODIFIED", web)},
			want: `NAME        READY   STATUS    RESTARTS   AGE
web-edge1   1/1     Running   0          5h
`,
		},
		{
			name:   "a longer cell widens its column from then on",
			events: []api.PodWatchEvent{ev("ADDED", web), bookmark, ev("ADDED", dns)},
			want: `NAME        READY   STATUS    RESTARTS   AGE
web-edge1   1/1     Running   0          5h
dns-edge1   1/1     Running   0          10d
`,
		},
		{
			name:   "wide: IP and FILE",
			wide:   true,
			events: []api.PodWatchEvent{bookmark, ev("ADDED", crash)},
			want: `NAME          READY   STATUS             RESTARTS      AGE    IP          FILE
crash-edge1   0/1     CrashLoopBackOff   4 (12m ago)   2d2h   10.88.0.3   /etc/tug/manifests/crash.yaml
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			pw := &podWatcher{client: &api.Client{SocketPath: sock}, opts: tableOptions{wide: tt.wide},
				out: &out, stderr: &errOut, printed: map[string]string{}, now: func() time.Time { return now }}
			for _, e := range tt.events {
				if err := pw.handle(context.Background(), e); err != nil {
					t.Fatal(err)
				}
			}
			if got := out.String(); got != tt.want {
				t.Errorf("tug pods -w printed:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestRowKey(t *testing.T) {
	tests := []struct {
		name      string
		a, b      []string
		namespace bool
		same      bool
	}{
		{"age moves", []string{"web", "1/1", "Running", "0", "5s"}, []string{"web", "1/1", "Running", "0", "6s"}, false, true},
		{"restart age moves", []string{"web", "0/1", "Error", "3 (5s ago)", "1m"}, []string{"web", "0/1", "Error", "3 (6s ago)", "1m"}, false, true},
		{"restart count", []string{"web", "0/1", "Error", "3 (5s ago)", "1m"}, []string{"web", "0/1", "Error", "4 (0s ago)", "1m"}, false, false},
		{"status", []string{"web", "0/1", "Error", "0", "1m"}, []string{"web", "0/1", "CrashLoopBackOff", "0", "1m"}, false, false},
		{"ready", []string{"web", "0/1", "Running", "0", "1m"}, []string{"web", "1/1", "Running", "0", "1m"}, false, false},
		{"namespace column: age moves", []string{"default", "web", "1/1", "Running", "0", "5s"}, []string{"default", "web", "1/1", "Running", "0", "7s"}, true, true},
		{"wide: IP", []string{"web", "1/1", "Running", "0", "5s", "10.0.0.1", "f"}, []string{"web", "1/1", "Running", "0", "5s", "10.0.0.2", "f"}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if same := rowKey(tt.a, tt.namespace) == rowKey(tt.b, tt.namespace); same != tt.same {
				t.Errorf("rowKey(%q) == rowKey(%q) is %v, want %v", tt.a, tt.b, same, tt.same)
			}
		})
	}
}

func TestWidthsFromHeader(t *testing.T) {
	tests := []struct {
		header string
		titles []string
		want   []int
	}{
		{"NAME          READY   STATUS", []string{"NAME", "READY", "STATUS"}, []int{14, 8}},
		{"NAMESPACE   NAME   AGE", []string{"NAMESPACE", "NAME", "AGE"}, []int{12, 7}},
		{"", []string{"NAME", "AGE"}, nil},
		{"NAME   AGE", []string{"NAME", "READY", "AGE"}, nil},
	}
	for _, tt := range tests {
		if got := widthsFromHeader(tt.header, tt.titles); !slices.Equal(got, tt.want) {
			t.Errorf("widthsFromHeader(%q) = %v, want %v", tt.header, got, tt.want)
		}
	}
}

func TestPodWatcherJSON(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	web := fixture(now).pods[0]
	var out bytes.Buffer
	pw := &podWatcher{json: true, out: &out, printed: map[string]string{}, now: func() time.Time { return now }}
	for _, e := range []api.PodWatchEvent{{Type: api.WatchAdded, Object: web}, {Type: api.WatchBookmark}, {Type: api.WatchModified, Object: web}} {
		if err := pw.handle(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-edge1"`) || lines[0] != lines[1] {
		t.Errorf("tug pods -w -o json printed %q, want the pod twice as a JSON line, no bookmark", lines)
	}
}
