package kit

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseStatTicks(t *testing.T) {
	tests := []struct {
		name, line string
		want       uint64
		bad        bool
	}{
		{name: "plain", line: "7061 (cat) R 7054 7054 24755 0 -1 4194304 99 0 0 0 12 30 0 0 20 0 1 0 75965 3133440 382", want: 42},
		// The command name may hold spaces and ')': fields count from the last ')'.
		{name: "odd command name", line: "42 (a) b (c)) S 1 1 1 0 -1 0 0 0 0 0 7 3 0 0 20 0 1 0 1 1 1", want: 10},
		{name: "no command name", line: "42 a S 1", bad: true},
		{name: "truncated", line: "42 (a) S 1 1 1", bad: true},
		{name: "not a number", line: "7061 (cat) R 7054 7054 24755 0 -1 4194304 99 0 0 0 x 30 0", bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseStatTicks(tt.line)
			if (err != nil) != tt.bad || got != tt.want {
				t.Errorf("ParseStatTicks = %d, %v; want %d, error %v", got, err, tt.want, tt.bad)
			}
		})
	}
}

func TestParseKiB(t *testing.T) {
	tests := []struct {
		file string
		keys []string
		want []int64
	}{
		{"testdata/status", []string{"VmRSS:", "VmHWM:"}, []int64{30720, 40960}},
		{"testdata/smaps_rollup", []string{"Pss:"}, []int64{21760}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			f, err := os.Open(tt.file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got, err := ParseKiB(f, tt.keys...)
			if err != nil || len(got) != len(tt.want) || got[0] != tt.want[0] || got[len(got)-1] != tt.want[len(tt.want)-1] {
				t.Errorf("ParseKiB = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
	// Pss_Anon and the like must not pass for Pss; a missing key fails.
	if _, err := ParseKiB(strings.NewReader("Pss_Anon: 5 kB\n"), "Pss:"); err == nil {
		t.Error("Pss found in a rollup without a Pss line")
	}
	if _, err := ParseKiB(strings.NewReader("Pss: many kB\n"), "Pss:"); err == nil {
		t.Error("a non-number parsed")
	}
}

// The memory of this very process: PSS is at most RSS, and every figure is
// there.
func TestReadMemorySelf(t *testing.T) {
	m, err := ReadMemory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if m.RSS <= 0 || m.PSS <= 0 || m.PSS > m.RSS || m.HWM < m.RSS {
		t.Errorf("ReadMemory(self) = %+v", m)
	}
	sum, err := SumMemory([]int{os.Getpid(), os.Getpid()})
	if err != nil || sum.PSS < m.PSS {
		t.Errorf("SumMemory = %+v, %v", sum, err)
	}
}

func TestParseCPUTimes(t *testing.T) {
	idle, total, err := ParseCPUTimes("cpu  100 0 50 800 50 0 0 0 0 0")
	if err != nil || idle != 850 || total != 1000 {
		t.Errorf("ParseCPUTimes = %d, %d, %v; want 850, 1000", idle, total, err)
	}
	if _, _, err := ParseCPUTimes("intr 1 2 3"); err == nil {
		t.Error("a non-cpu line parsed")
	}
}

func TestCPUPercent(t *testing.T) {
	tests := []struct {
		ticks, clk uint64
		window     time.Duration
		want       float64
	}{
		{ticks: 60, clk: 100, window: 60 * time.Second, want: 1}, // 0.6 s of 60 s
		{ticks: 200, clk: 100, window: time.Second, want: 200},   // two cores busy
		{ticks: 5, clk: 0, window: time.Second, want: 0},         // no clock
		{ticks: 5, clk: 100, window: 0, want: 0},                 // no window
	}
	for _, tt := range tests {
		if got := CPUPercent(tt.ticks, tt.clk, tt.window); got != tt.want {
			t.Errorf("CPUPercent(%d, %d, %v) = %g, want %g", tt.ticks, tt.clk, tt.window, got, tt.want)
		}
	}
}

// A window over this process measures the CPU it burns meanwhile.
func TestCPUWindowSelf(t *testing.T) {
	w, err := StartCPU(ProcSet{Name: "self", PIDs: []int{os.Getpid()}})
	if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
	}
	usage, window, err := w.Stop()
	if err != nil || len(usage) != 1 || window < 300*time.Millisecond {
		t.Fatalf("Stop = %v, %v, %v", usage, window, err)
	}
	if usage[0].Percent <= 0 || usage[0].Percent > 100*float64(len(usage))*8 {
		t.Errorf("a busy loop measured %g%% of one core", usage[0].Percent)
	}
}
