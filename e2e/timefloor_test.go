//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/prompb"

	"tug/internal/statusreport"
	"tug/internal/timefloor"
)

// sampleReceiver is a remote-write endpoint that keeps the timestamp of
// every sample it receives, with when it received it.
type sampleReceiver struct {
	t   *testing.T
	mu  sync.Mutex
	got []int64 // ms
	at  []time.Time
}

func (r *sampleReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	data, err := snappy.Decode(nil, body)
	var wr prompb.WriteRequest
	if err == nil {
		err = wr.Unmarshal(data)
	}
	if err != nil {
		r.t.Errorf("remote-write receiver: %v", err)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ts := range wr.Timeseries {
		for _, s := range ts.Samples {
			r.got, r.at = append(r.got, s.Timestamp), append(r.at, time.Now())
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

func (r *sampleReceiver) samples() ([]int64, []time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int64(nil), r.got...), append([]time.Time(nil), r.at...)
}

// TestClockBehindHoldsReports: a tug whose clock is below its time floor
// (the floor file says a time 30 s ahead, as a device booted at 1970 finds
// its floor ahead of its clock) runs its pods, says so once (a Warn, a
// node event, the ClockBehind node condition) and sends no status
// document and no sample; once the clock passes the floor it says the
// clock is sane again, clears the condition, sends the status document
// and the samples it held, those with the times they were gathered at.
func TestClockBehindHoldsReports(t *testing.T) {
	t.Parallel()
	floor := time.Now().Add(30 * time.Second).UTC()
	rw := &sampleReceiver{t: t}
	rwSrv := httptest.NewServer(rw)
	t.Cleanup(rwSrv.Close)
	tg, r, _ := statusTugBefore(t, func(tg *tug) {
		tg.relay(strings.TrimPrefix(rwSrv.URL, "http://"))
		if err := os.WriteFile(filepath.Join(tg.rootDir, "timefloor"), []byte(floor.Format(time.RFC3339Nano)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}, "--metrics-remote-write-url", rwSrv.URL+"/write", "--metrics-push-interval", "2s")
	started := time.Now()
	tg.writeManifest("clk.yaml", rolloutPod("clk", tg.image, idle, nil, ""))
	tg.waitRunning(startTimeout, "clk", "main", 0)

	// Behind: said once, shown on the node and in the events, nothing sent.
	tg.waitForOutput(10*time.Second, "the clock is behind tug's time floor")
	node := tg.cli("node", "-o", "json")
	if !strings.Contains(node, `"type": "`+timefloor.ConditionType+`"`) || !strings.Contains(node, `"reason": "`+timefloor.ReasonBehind+`"`) {
		t.Errorf("tug node while behind shows no ClockBehind True:\n%s", node)
	}
	if ev := tg.cli("events"); !strings.Contains(ev, timefloor.ReasonBehind) || !strings.Contains(ev, "node/") {
		t.Errorf("tug events while behind shows no node event %s:\n%s", timefloor.ReasonBehind, ev)
	}
	time.Sleep(3 * statusMinInterval)
	if time.Now().After(floor.Add(-timefloor.DefaultTolerance)) {
		t.Fatalf("the pod took too long: the floor (%v) is passed before the hold could be checked", floor)
	}
	if n := r.count(); n != 0 {
		t.Errorf("%d status documents sent while the clock is behind", n)
	}
	if got, _ := rw.samples(); len(got) != 0 {
		t.Errorf("%d samples sent while the clock is behind", len(got))
	}

	// The clock passes the floor: sane again, everything sent.
	tg.waitForOutput(60*time.Second, "the clock is at or past tug's time floor again")
	r.waitDoc(tg, 20*time.Second, 0, "clk running, after the hold", func(d statusreport.Document) error {
		p, err := reportedPod(d, "clk")
		if err == nil && p.Phase != "Running" {
			err = fmt.Errorf("clk %+v", p)
		}
		if err == nil && d.GeneratedAt.Before(floor.Add(-timefloor.DefaultTolerance)) {
			err = fmt.Errorf("document of %v, before the floor %v", d.GeneratedAt, floor)
		}
		for _, c := range d.Node.Conditions {
			if err == nil && c.Type == timefloor.ConditionType && c.Status != "False" {
				err = fmt.Errorf("condition %+v after the hold", c)
			}
		}
		return err
	})
	tg.waitFor(20*time.Second, "held samples with their true times", func() (bool, error) {
		got, _ := rw.samples()
		for _, ts := range got {
			at := time.UnixMilli(ts)
			if at.Before(floor.Add(-timefloor.DefaultTolerance)) && at.After(started.Add(-5*time.Second)) {
				return true, nil
			}
		}
		return false, fmt.Errorf("%d samples, none stamped between tug's start and the floor", len(got))
	})
	if got, _ := rw.samples(); len(got) > 0 {
		for _, ts := range got {
			if at := time.UnixMilli(ts); at.Before(started.Add(-time.Minute)) || at.After(time.Now().Add(time.Second)) {
				t.Errorf("a sample stamped %v, not between tug's start and now", at)
				break
			}
		}
	}
	if n := strings.Count(tg.output(), "the clock is behind tug's time floor"); n != 1 {
		t.Errorf("the clock behind said %d times, want once", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	nv, err := tg.api().Node(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range nv.Status.Conditions {
		if c.Type == timefloor.ConditionType && c.Status != "False" {
			t.Errorf("GET /node after the hold: %+v", c)
		}
	}
}
