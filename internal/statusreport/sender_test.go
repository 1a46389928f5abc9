package statusreport

import (
	"compress/gzip"
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"tug/internal/bundle"
	"tug/internal/pod"
	"tug/internal/podview"
	"tug/internal/source"
	"tug/internal/testutil"
)

// fakeState is a StatusSource whose pods the test sets.
type fakeState struct {
	mu   sync.Mutex
	pods []podview.View
}

func (f *fakeState) set(names ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pods = nil
	for _, n := range names {
		f.pods = append(f.pods, podview.View{Metadata: pod.ObjectMeta{Namespace: "default", Name: n, UID: n}, Status: pod.Status{Phase: pod.PhaseRunning}})
	}
}

func (f *fakeState) Pods() []podview.View {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]podview.View(nil), f.pods...)
}

func (f *fakeState) Manifests() []podview.ManifestStatus { return nil }

// fakeEndpoint is the status URL as a RoundTripper: it records what it
// accepts and answers 503 while down.
type fakeEndpoint struct {
	mu       sync.Mutex
	down     bool
	attempts int
	got      []Document
	headers  []http.Header
}

func (f *fakeEndpoint) RoundTrip(r *http.Request) (*http.Response, error) {
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attempts++
	code := http.StatusNoContent
	if f.down {
		code = http.StatusServiceUnavailable
	} else {
		var d Document
		if err := json.Unmarshal(body, &d); err != nil {
			return nil, err
		}
		f.got = append(f.got, d)
		f.headers = append(f.headers, r.Header.Clone())
	}
	return &http.Response{StatusCode: code, Status: http.StatusText(code), Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
}

// readBody reads a request's body as a receiver does: gunzipped when its
// Content-Encoding is gzip.
func readBody(r *http.Request) ([]byte, error) {
	var body io.Reader = r.Body
	switch enc := r.Header.Get("Content-Encoding"); enc {
	case "":
	case "gzip":
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			return nil, err
		}
		body = zr
	default:
		return nil, fmt.Errorf("content encoding %q", enc)
	}
	return io.ReadAll(body)
}

func (f *fakeEndpoint) setDown(down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = down
}

// received returns the documents accepted and the attempts made.
func (f *fakeEndpoint) received() ([]Document, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Document(nil), f.got...), f.attempts
}

func podNames(d Document) string {
	var names []string
	for _, p := range d.Pods {
		names = append(names, p.Name)
	}
	return strings.Join(names, ",")
}

// startSender runs a sender over state and ep until the test ends; logs
// go to the returned buffer.
func startSender(t *testing.T, state *fakeState, ep *fakeEndpoint, reg prometheus.Registerer) *testutil.SyncBuffer {
	t.Helper()
	return startHeldSender(t, state, ep, reg, nil)
}

// startHeldSender is startSender with Config.Hold.
func startHeldSender(t *testing.T, state *fakeState, ep *fakeEndpoint, reg prometheus.Registerer, hold func() bool) *testutil.SyncBuffer {
	t.Helper()
	logs := &testutil.SyncBuffer{}
	s, err := New(Config{
		URL:        "https://fleet.example/status?token=s3cret",
		Client:     &http.Client{Transport: ep},
		Header:     http.Header{"Authorization": {"Bearer s3cret"}},
		Status:     state,
		NodeName:   "kiosk-1",
		TugVersion: "v1.2.3",
		Registerer: reg,
		Log:        slog.New(slog.NewTextHandler(logs, nil)),
		Hold:       hold,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v", err)
		}
	})
	return logs
}

func TestSenderHeartbeatAndChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		state, ep := &fakeState{}, &fakeEndpoint{}
		state.set("a")
		startSender(t, state, ep, nil)
		synctest.Wait()
		got, _ := ep.received()
		if len(got) != 1 || podNames(got[0]) != "a" || got[0].Node.Name != "kiosk-1" || got[0].TugVersion != "v1.2.3" {
			t.Fatalf("at start: %+v", got)
		}
		if h := ep.headers[0]; h.Get("Authorization") != "Bearer s3cret" || h.Get("Content-Type") != "application/json" {
			t.Errorf("headers %v", h)
		}

		// Nothing changes: nothing is sent before the heartbeat (1m -10%).
		time.Sleep(50 * time.Second)
		if got, _ := ep.received(); len(got) != 1 {
			t.Fatalf("%d documents within 50s of an unchanged state", len(got))
		}
		// The heartbeat comes by 1m +10% (and a tick).
		time.Sleep(20 * time.Second)
		got, _ = ep.received()
		if len(got) != 2 || podNames(got[1]) != "a" || !got[1].GeneratedAt.After(got[0].GeneratedAt) {
			t.Fatalf("no heartbeat by 70s: %+v", got)
		}

		// A burst of changes within one MinInterval makes one document,
		// of the last state, within MinInterval.
		time.Sleep(DefaultMinInterval / 2)
		for _, names := range [][]string{{"a", "b"}, {"a", "b", "c"}, {"b", "c"}} {
			state.set(names...)
			time.Sleep(DefaultMinInterval / 10)
		}
		time.Sleep(DefaultMinInterval)
		got, _ = ep.received()
		if len(got) != 3 || podNames(got[2]) != "b,c" {
			t.Fatalf("after a burst of changes: %d documents, last %q", len(got), podNames(got[len(got)-1]))
		}
	})
}

// TestSenderHoldsWhileClockBehind: while Hold says the clock is behind,
// nothing is sent and no failure is counted, heartbeat or change; the
// first look after sends the state of that moment.
func TestSenderHoldsWhileClockBehind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		state, ep := &fakeState{}, &fakeEndpoint{}
		state.set("a")
		var held atomic.Bool
		held.Store(true)
		reg := prometheus.NewRegistry()
		startHeldSender(t, state, ep, reg, held.Load)
		synctest.Wait()
		time.Sleep(2 * DefaultFrequency) // two heartbeats' time
		state.set("a", "b")
		time.Sleep(DefaultMinInterval)
		synctest.Wait()
		if got, _ := ep.received(); len(got) != 0 {
			t.Fatalf("%d documents sent while held", len(got))
		}
		if n := reportCount(t, reg, "failure") + reportCount(t, reg, "success"); n != 0 {
			t.Errorf("%v reports counted while held", n)
		}
		held.Store(false)
		time.Sleep(DefaultMinInterval)
		synctest.Wait()
		got, _ := ep.received()
		if len(got) != 1 || podNames(got[0]) != "a,b" {
			t.Fatalf("after the hold: %d documents, want one of a,b: %+v", len(got), got)
		}
	})
}

func TestSenderOutageSendsLatestOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		state, ep := &fakeState{}, &fakeEndpoint{}
		state.set("a")
		reg := prometheus.NewRegistry()
		logs := startSender(t, state, ep, reg)
		synctest.Wait()

		// Five minutes down while the pods change every 10 s.
		ep.setDown(true)
		for i := range 30 {
			state.set("a", string(rune('b'+i%20)))
			time.Sleep(10 * time.Second)
		}
		state.set("latest")
		// A look at the state begun just before the change (a tick at the
		// same instant) ends, still failing, before the link comes back.
		synctest.Wait()
		got, attempts := ep.received()
		if len(got) != 1 {
			t.Fatalf("accepted %d documents while down", len(got))
		}
		// Back-off: 1, 2, 4, 8, 16, 32, then every minute at most.
		if attempts > 1+14 {
			t.Errorf("%d attempts in 5 minutes down: no back-off", attempts)
		}
		if n := strings.Count(logs.String(), "status report failed"); n != 1 {
			t.Errorf("the failure is logged %d times:\n%s", n, logs)
		}

		ep.setDown(false)
		time.Sleep(MaxBackoff + DefaultMinInterval)
		synctest.Wait() // a tick at this same instant has sent its document
		// The first document after the outage is the latest state; a
		// retry early in the back-off may leave room for the heartbeat
		// (54 s at the earliest), of the same state, within the wait.
		got, _ = ep.received()
		after := make([]string, 0, len(got))
		for _, d := range got[1:] {
			after = append(after, podNames(d))
		}
		if len(after) == 0 || len(after) > 2 || slices.ContainsFunc(after, func(n string) bool { return n != "latest" }) {
			t.Fatalf("after the outage: documents of %q, want the latest state once (and a heartbeat at most)", after)
		}
		if n := strings.Count(logs.String(), "status report delivered again"); n != 1 {
			t.Errorf("the recovery is logged %d times:\n%s", n, logs)
		}
		if strings.Contains(logs.String(), "s3cret") {
			t.Errorf("a secret is logged:\n%s", logs)
		}
		if ok, failed := reportCount(t, reg, "success"), reportCount(t, reg, "failure"); ok != float64(len(got)) || failed < 5 {
			t.Errorf("tug_status_reports_total: success %v, failure %v", ok, failed)
		}
	})
}

// reportCount reads tug_status_reports_total{result} from reg.
func reportCount(t *testing.T, reg *prometheus.Registry, result string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "tug_status_reports_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// TestSenderTLS sends signed documents over mutual TLS to a server that
// trusts only the test CA, and a redirect is not followed.
func TestSenderTLS(t *testing.T) {
	dir := t.TempDir()
	ca := testutil.NewCA(t, "fleet CA")
	caFile := filepath.Join(dir, "ca.pem")
	os.WriteFile(caFile, ca.PEM, 0o600)
	certFile, keyFile := ca.Issue(t, dir, "kiosk-1", nil)
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	pub, priv, _ := ed25519.GenerateKey(nil)

	docs := make(chan Document, 10)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, "/status", http.StatusTemporaryRedirect)
			return
		}
		body, err := readBody(r)
		if err != nil {
			t.Error(err)
		}
		env, err := bundle.ParseEnvelope(body)
		if err == nil {
			err = env.Verify([]ed25519.PublicKey{pub})
		}
		if err != nil || r.Header.Get("Content-Type") != EnvelopeContentType || len(r.TLS.PeerCertificates) == 0 {
			t.Errorf("request: %v, %q", err, r.Header.Get("Content-Type"))
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		var d Document
		if err := json.Unmarshal(env.Body, &d); err != nil {
			t.Error(err)
		}
		docs <- d
		w.WriteHeader(http.StatusNoContent)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.ServerPair(t, net.IPv4(127, 0, 0, 1))}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert}
	srv.StartTLS()
	defer srv.Close()

	tlsCfg, err := source.ClientTLS(source.TLSFiles{CA: caFile, CAReplace: true, ClientCert: certFile, ClientKey: keyFile})
	if err != nil {
		t.Fatal(err)
	}
	signer, err := NewSigner(priv, "kiosk-1", filepath.Join(dir, "sequence"), time.Now(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	state := &fakeState{}
	state.set("a")
	for _, tt := range []struct {
		path string
		ok   bool
	}{{"/status", true}, {"/moved", false}} {
		s, err := New(Config{URL: srv.URL + tt.path, Client: NewClient(tlsCfg, 0), Signer: signer, Status: state, NodeName: "kiosk-1"})
		if err != nil {
			t.Fatal(err)
		}
		err = s.send(context.Background(), s.build())
		if (err == nil) != tt.ok {
			t.Fatalf("POST %s: %v", tt.path, err)
		}
		if !tt.ok && !errors.Is(err, ErrRefused) {
			t.Errorf("POST %s: %v, want ErrRefused", tt.path, err)
		}
	}
	d := <-docs
	if d.Node.Name != "kiosk-1" || d.Node.KeyFingerprint != signer.Fingerprint() || podNames(d) != "a" {
		t.Errorf("received %+v", d)
	}
}

// TestTrueTime: a time without a monotonic reading is kept as it is; one
// with it is the wall time now's clock gives it (with no step between, the
// same instant).
func TestTrueTime(t *testing.T) {
	now := time.Now()
	read := now.Add(-time.Minute) // carries the monotonic reading
	if got := trueTime(now, read); got != read.Round(0) {
		t.Errorf("trueTime(now, a reading a minute ago) = %v, want %v", got, read)
	}
	fromFile := time.Date(1970, 1, 1, 0, 0, 34, 0, time.UTC)
	if got := trueTime(now, fromFile); got != fromFile {
		t.Errorf("trueTime of a time without a monotonic reading = %v, want it as it is", got)
	}
	if got := trueTime(now, time.Time{}); !got.IsZero() {
		t.Errorf("trueTime(zero) = %v", got)
	}
}

// TestSettle: a true time computed again and again while the wall clock
// only drifts from the monotonic one stays the same value (a document is
// sent on every change); a step gives the true time to the second.
func TestSettle(t *testing.T) {
	read := time.Date(2026, 11, 29, 18, 38, 24, 905859677, time.UTC)
	in1970 := time.Date(1970, 1, 1, 0, 0, 34, 5, time.UTC)
	stepped := time.Date(2026, 11, 29, 18, 0, 5, 0, time.UTC)
	for _, tt := range []struct {
		name           string
		computed, read time.Time
		want           time.Time
	}{
		{"the same", read, read, read},
		{"drifted by nanoseconds", read.Add(731), read, read},
		{"drifted back by milliseconds", read.Add(-3 * time.Millisecond), read, read},
		{"read in 1970", stepped.Add(123), in1970, stepped},
		{"read in 1970, then drift", stepped.Add(9999), in1970, stepped},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := settle(tt.computed, tt.read); got != tt.want {
				t.Errorf("settle = %v, want %v", got, tt.want)
			}
		})
	}
}
