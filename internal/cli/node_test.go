package cli

import (
	"bytes"
	"testing"
	"time"

	"tug/internal/pod"
	"tug/internal/podview"
)

func TestWriteNode(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	conds := []pod.NodeCondition{{Type: pod.NodeMemoryPressure, Status: "False", Reason: "KubeletHasSufficientMemory", LastTransitionTime: at}}
	tests := []struct {
		name      string
		status    pod.NodeStatus
		noHeaders bool
		want      string
	}{
		{"conditions only", pod.NodeStatus{Conditions: conds}, false, `Name: n1
Conditions:
  TYPE            STATUS  LASTTRANSITION        REASON                      MESSAGE
  MemoryPressure  False   2026-01-02T03:04:05Z  KubeletHasSufficientMemory  
`},
		{"device resources", pod.NodeStatus{Conditions: conds,
			Capacity:    map[string]string{"tug.io/serial": "1", "example.com/dongle": "3"},
			Allocatable: map[string]string{"tug.io/serial": "1", "example.com/dongle": "3"}}, false, `Name: n1
Conditions:
  TYPE            STATUS  LASTTRANSITION        REASON                      MESSAGE
  MemoryPressure  False   2026-01-02T03:04:05Z  KubeletHasSufficientMemory  
Resources:
  NAME                CAPACITY  ALLOCATABLE
  example.com/dongle  3         3
  tug.io/serial       1         1
`},
		{"no headers", pod.NodeStatus{Capacity: map[string]string{"a.io/b\x1b": "0"}, Allocatable: map[string]string{"a.io/b\x1b": "0"}}, true, `Name: n1
Conditions:
Resources:
  a.io/b\x1b  0  0
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			v := podview.NodeView{Metadata: podview.NodeMeta{Name: "n1"}, Status: tt.status}
			if err := writeNode(&b, v, &output{format: formatTable, noHeaders: tt.noHeaders}); err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.want {
				t.Errorf("got\n%q\nwant\n%q", b.String(), tt.want)
			}
		})
	}
}
