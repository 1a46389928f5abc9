//go:build e2e

package e2e

import (
	"bytes"
	"compress/gzip"
	"crypto/ed25519"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"tug/internal/bundle"
	"tug/internal/pod"
	"tug/internal/podview"
	"tug/internal/statusreport"
	"tug/internal/testutil"
)

// statusFrequency is the heartbeat of the status report tests.
const statusFrequency = 3 * time.Second

// statusMinInterval is the sender's least time between two documents
// (statusreport.DefaultMinInterval, which tug runs with).
const statusMinInterval = statusreport.DefaultMinInterval

// receivedDoc is one status document the receiver accepted.
type receivedDoc struct {
	at      time.Time // when it arrived
	version uint64    // its envelope's sequence number
	doc     statusreport.Document
}

// statusReceiver is a fleet's status endpoint: HTTPS with a test CA, a
// client certificate required, the device's header required, every
// document gzip-compressed (Content-Encoding: gzip, tug's default) and its
// signature checked with the device's public key. While down it answers
// 503.
type statusReceiver struct {
	t      *testing.T
	srv    *httptest.Server
	pub    ed25519.PublicKey
	header string // the Authorization header it wants
	node   string // the node name it wants (the harness's hostname unless set)

	mu       sync.Mutex
	down     bool
	refused  int // requests answered 503
	received []receivedDoc
}

func (r *statusReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.down {
		r.refused++
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	check := func() (receivedDoc, error) {
		if err != nil {
			return receivedDoc{}, err
		}
		if len(req.TLS.PeerCertificates) == 0 {
			return receivedDoc{}, fmt.Errorf("no client certificate")
		}
		if got := req.Header.Get("Authorization"); got != r.header {
			return receivedDoc{}, fmt.Errorf("authorization header %q", got)
		}
		if ct := req.Header.Get("Content-Type"); ct != statusreport.EnvelopeContentType {
			return receivedDoc{}, fmt.Errorf("content type %q", ct)
		}
		if ce := req.Header.Get("Content-Encoding"); ce != "gzip" {
			return receivedDoc{}, fmt.Errorf("content encoding %q, want gzip", ce)
		}
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return receivedDoc{}, fmt.Errorf("gzip body: %w", err)
		}
		if body, err = io.ReadAll(zr); err != nil {
			return receivedDoc{}, fmt.Errorf("gzip body: %w", err)
		}
		env, err := bundle.ParseEnvelope(body)
		if err != nil {
			return receivedDoc{}, err
		}
		if err := env.Verify([]ed25519.PublicKey{r.pub}); err != nil {
			return receivedDoc{}, err
		}
		if err := env.ForNode(r.node); err != nil {
			return receivedDoc{}, err
		}
		if err := env.Fresh(time.Now()); err != nil {
			return receivedDoc{}, err
		}
		var d statusreport.Document
		if err := json.Unmarshal(env.Body, &d); err != nil {
			return receivedDoc{}, err
		}
		fp, _ := statusreport.Fingerprint(r.pub)
		if d.APIVersion != statusreport.APIVersion || d.Node.Name != r.node || d.Node.KeyFingerprint != fp {
			return receivedDoc{}, fmt.Errorf("document %s %s %s, want %s %s %s", d.APIVersion, d.Node.Name, d.Node.KeyFingerprint, statusreport.APIVersion, r.node, fp)
		}
		if n := len(r.received); n > 0 && env.Header.Version <= r.received[n-1].version {
			return receivedDoc{}, fmt.Errorf("version %d after %d", env.Header.Version, r.received[n-1].version)
		}
		return receivedDoc{at: time.Now(), version: env.Header.Version, doc: d}, nil
	}
	rd, err := check()
	if err != nil {
		r.t.Errorf("status receiver: %v", err)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	r.received = append(r.received, rd)
	w.WriteHeader(http.StatusNoContent)
}

func (r *statusReceiver) setDown(down bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.down = down
}

// since returns the documents received from the n-th on, and how many
// requests were refused.
func (r *statusReceiver) since(n int) ([]receivedDoc, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]receivedDoc(nil), r.received[min(n, len(r.received)):]...), r.refused
}

// count returns how many documents were received.
func (r *statusReceiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.received)
}

// waitDoc waits for a document received from the n-th on that check
// accepts, and returns its index.
func (r *statusReceiver) waitDoc(tg *tug, timeout time.Duration, n int, what string, check func(d statusreport.Document) error) int {
	tg.t.Helper()
	found := -1
	tg.waitFor(timeout, "a status document: "+what, func() (bool, error) {
		docs, _ := r.since(n)
		var last error = fmt.Errorf("no document")
		for i, rd := range docs {
			if last = check(rd.doc); last == nil {
				found = n + i
				return true, nil
			}
		}
		return false, last
	})
	return found
}

// reportedPod returns the pod named name (its static name) in d.
func reportedPod(d statusreport.Document, name string) (statusreport.Pod, error) {
	for _, p := range d.Pods {
		if p.Name == staticName(name) {
			return p, nil
		}
	}
	return statusreport.Pod{}, fmt.Errorf("no pod %s in %d pods", staticName(name), len(d.Pods))
}

// withoutTime is d's JSON without its time, to compare two documents.
func withoutTime(d statusreport.Document) string {
	d.GeneratedAt = time.Time{}
	b, _ := json.Marshal(d)
	return string(b)
}

// statusTug starts a tug that reports to a new receiver with mutual TLS,
// a header file and a signing key; more are extra flags.
func statusTug(t *testing.T, more ...string) (*tug, *statusReceiver, []string) {
	return statusTugBefore(t, nil, more...)
}

// statusTugBefore is statusTug with before run when the directories are
// ready, before tug starts.
func statusTugBefore(t *testing.T, before func(tg *tug), more ...string) (*tug, *statusReceiver, []string) {
	return statusTugOn(t, hostname, before, more...)
}

// statusTugOn is statusTugBefore for a tug whose node is named node (its
// --hostname-override, which more must give when it is not the harness's).
func statusTugOn(t *testing.T, node string, before func(tg *tug), more ...string) (*tug, *statusReceiver, []string) {
	return statusTugWith(t, node, tugOpts{beforeStart: before}, more...)
}

// statusTugWith is statusTugOn with the harness's options opts (its
// beforeStart runs after the receiver's relay is set up).
func statusTugWith(t *testing.T, node string, opts tugOpts, more ...string) (*tug, *statusReceiver, []string) {
	dir := t.TempDir()
	ca := testutil.NewCA(t, "fleet CA")
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	clientCert, clientKey := ca.Issue(t, dir, "device", nil)
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	signingKey := filepath.Join(dir, "status.key")
	if err := os.WriteFile(signingKey, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	token, urlSecret := "e2e-header-s3cret", "e2e-url-s3cret"
	headerFile := filepath.Join(dir, "status-headers")
	if err := os.WriteFile(headerFile, []byte("# the fleet's token\nAuthorization: Bearer "+token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	clients := x509.NewCertPool()
	clients.AddCert(ca.Cert)
	r := &statusReceiver{t: t, pub: pub, header: "Bearer " + token, node: node}
	r.srv = httptest.NewUnstartedServer(r)
	r.srv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.ServerPair(t, net.ParseIP("127.0.0.1"))},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clients}
	r.srv.StartTLS()
	t.Cleanup(r.srv.Close)
	u, _ := url.Parse(r.srv.URL)
	keyPEM, _ := os.ReadFile(clientKey)
	secrets := []string{token, urlSecret, base64.StdEncoding.EncodeToString(priv.Seed()), pemBody(keyPEM), pemBody(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))}
	before := opts.beforeStart
	opts.args = append([]string{
		"--status-url", r.srv.URL + "/status?token=" + urlSecret,
		"--status-url-ca", caFile,
		"--status-url-client-cert", clientCert, "--status-url-client-key", clientKey,
		"--status-url-header-file", headerFile,
		"--status-signing-key", signingKey,
		"--status-frequency", statusFrequency.String(),
	}, more...)
	opts.beforeStart = func(tg *tug) {
		tg.relay(u.Host)
		if before != nil {
			before(tg)
		}
	}
	tg := startTug(t, opts)
	return tg, r, secrets
}

// pemBody is the first line of a PEM block's base64, to look for it in logs.
func pemBody(p []byte) string {
	lines := strings.Split(string(p), "\n")
	if len(lines) < 2 {
		return string(p)
	}
	return lines[1]
}

// readyProbe is a readiness probe that passes while /tmp/ready exists.
const readyProbe = "      readinessProbe:\n        exec: {command: [cat, /tmp/ready]}\n        periodSeconds: 1\n"

// TestStatusReport: tug pushes its signed status document over mutual TLS
// when a pod starts, when its readiness changes, when an update is rolled
// back, and as a heartbeat; the document verifies with the device's key,
// and no secret shows in tug's output.
func TestStatusReport(t *testing.T) {
	t.Parallel()
	tg, r, secrets := statusTug(t, rolloutArgs...)
	tg.writeManifest("flip.yaml", rolloutPod("flip", tg.image, idle, nil, readyProbe))
	ann := map[string]string{"tug.io/rollout-max-restarts": "1", "tug.io/rollout-timeout": "60s"}
	tg.writeManifest("roll.yaml", rolloutPod("roll", tg.image, fmt.Sprintf(rolloutWeb, "v1"), ann, ""))

	r.waitDoc(tg, startTimeout, 0, "flip runs, not ready", func(d statusreport.Document) error {
		p, err := reportedPod(d, "flip")
		if err == nil && (p.Phase != "Running" || p.Ready) {
			err = fmt.Errorf("flip %+v", p)
		}
		return err
	})
	n := r.count()
	tg.cli("exec", "flip", "--", "touch", "/tmp/ready")
	r.waitDoc(tg, 30*time.Second, n, "flip ready", func(d statusreport.Document) error {
		p, err := reportedPod(d, "flip")
		if err == nil && !p.Ready {
			err = fmt.Errorf("flip %+v", p)
		}
		return err
	})

	good := tg.waitGood("roll", "")
	r.waitDoc(tg, 30*time.Second, 0, "roll's good spec", func(d statusreport.Document) error {
		p, err := reportedPod(d, "roll")
		if err == nil && (p.Rollout == nil || p.Rollout.GoodHash != good || p.Rollout.Outcome != "Succeeded") {
			err = fmt.Errorf("roll %+v", p.Rollout)
		}
		return err
	})

	// The heartbeat: at rest, the same document comes again about every
	// statusFrequency.
	tg.waitFor(30*time.Second, "a heartbeat: the same document again", func() (bool, error) {
		docs, _ := r.since(0)
		for i := 1; i < len(docs); i++ {
			gap := docs[i].at.Sub(docs[i-1].at)
			if withoutTime(docs[i].doc) == withoutTime(docs[i-1].doc) && gap >= statusFrequency*8/10 {
				t.Logf("heartbeat after %v", gap)
				return true, nil
			}
		}
		return false, fmt.Errorf("%d documents, no two alike in a row", len(docs))
	})

	// A crashing update is rolled back, and the document says so.
	n = r.count()
	tg.writeManifest("roll.yaml", rolloutPod("roll", tg.image, "echo broken; exit 1", ann, ""))
	r.waitDoc(tg, 60*time.Second, n, "roll rolled back", func(d statusreport.Document) error {
		p, err := reportedPod(d, "roll")
		if err == nil && (p.Rollout == nil || p.Rollout.Outcome != "RolledBack" || p.Rollout.GoodHash != good ||
			p.Rollout.FailedHash == "" || p.Rollout.FailedHash == good || p.Reason != pod.ReasonRolledBack) {
			err = fmt.Errorf("roll %+v %+v", p, p.Rollout)
		}
		return err
	})

	if out := tg.output(); !strings.Contains(out, "status documents are signed") {
		t.Errorf("tug does not log its signing key's fingerprint")
	}
	checkNoSecret(t, tg, secrets)
}

// TestStatusReportOutage: while the receiver answers 503, tug retries with
// back-off; once it answers again the first document is the latest state,
// and no backlog of older documents follows.
func TestStatusReportOutage(t *testing.T) {
	t.Parallel()
	tg, r, secrets := statusTug(t)
	tg.writeManifest("flip.yaml", rolloutPod("flip", tg.image, "touch /tmp/ready; "+idle, nil, readyProbe))
	r.waitDoc(tg, startTimeout, 0, "flip ready", func(d statusreport.Document) error {
		p, err := reportedPod(d, "flip")
		if err == nil && !p.Ready {
			err = fmt.Errorf("flip %+v", p)
		}
		return err
	})

	r.setDown(true)
	_, refused0 := r.since(0)
	// The pods change while the receiver is down: flip becomes unready, a
	// pod is added.
	tg.cli("exec", "flip", "--", "rm", "/tmp/ready")
	tg.writeManifest("late.yaml", rolloutPod("late", tg.image, idle, nil, ""))
	tg.waitPod(startTimeout, "late", "running", func(v *podview.View) error {
		if v.Status.Phase != pod.PhaseRunning {
			return fmt.Errorf("phase %s", v.Status.Phase)
		}
		return nil
	})
	tg.waitPod(30*time.Second, "flip", "not ready", func(v *podview.View) error {
		if conditionOf(v, pod.ConditionReady).Status == "True" {
			return fmt.Errorf("still ready")
		}
		return nil
	})
	changed := time.Now()
	tg.waitFor(30*time.Second, "tug retries while the receiver is down", func() (bool, error) {
		_, refused := r.since(0)
		return refused-refused0 >= 3, fmt.Errorf("%d requests refused", refused-refused0)
	})
	// Outage log: one warning, whatever the retries.
	if c := strings.Count(tg.output(), "status report failed"); c != 1 {
		t.Errorf("the failing link is logged %d times, want once", c)
	}

	n := r.count()
	r.setDown(false)
	restored := time.Now()
	first := r.waitDoc(tg, 2*statusreport.MaxBackoff, n, "the first after the outage", func(statusreport.Document) error { return nil })
	docs, _ := r.since(first)
	d := docs[0].doc
	if p, err := reportedPod(d, "late"); err != nil || p.Phase != "Running" {
		t.Errorf("the first document after the outage is not the latest: late %+v, %v", p, err)
	}
	if p, err := reportedPod(d, "flip"); err != nil || p.Ready {
		t.Errorf("the first document after the outage is not the latest: flip %+v, %v", p, err)
	}
	if d.GeneratedAt.Before(changed) {
		t.Errorf("the first document after the outage was made at %v, before the last change (%v)", d.GeneratedAt, changed)
	}
	// No storm: from then on, at most one document per MinInterval.
	time.Sleep(3 * statusMinInterval)
	docs, _ = r.since(n)
	window := time.Since(restored)
	if limit := int(window/statusMinInterval) + 2; len(docs) > limit {
		t.Errorf("%d documents in the %v after the outage, want at most %d", len(docs), window.Round(time.Second), limit)
	}
	t.Logf("%d documents in the %v after the outage", len(docs), window.Round(time.Second))
	if c := strings.Count(tg.output(), "status report delivered again"); c != 1 {
		t.Errorf("the link coming back is logged %d times, want once", c)
	}
	checkNoSecret(t, tg, secrets)
}

// checkNoSecret fails t if tug's output, but for the command lines the
// harness writes in it, shows one of secrets.
func checkNoSecret(t *testing.T, tg *tug, secrets []string) {
	t.Helper()
	for _, line := range strings.Split(tg.output(), "\n") {
		if strings.HasPrefix(line, "==== ") {
			continue // the harness's command line: the URL as given
		}
		for _, s := range secrets {
			if strings.Contains(line, s) {
				t.Errorf("tug's output shows a secret (%.6s...): %.200s", s, line)
			}
		}
	}
}

// TestStatusQuietDeviceSendsHeartbeatsOnly: a device at rest sends its
// document as a heartbeat and nothing else: no field of it (a condition's
// transition time computed again at each build) changes while nothing
// happens, so no change sends one between heartbeats.
func TestStatusQuietDeviceSendsHeartbeatsOnly(t *testing.T) {
	t.Parallel()
	const beat = 20 * time.Second
	tg, r, _ := statusTug(t, "--status-frequency", beat.String())
	tg.writeManifest("quiet.yaml", shPod("quiet", tg.image, idle))
	r.waitDoc(tg, startTimeout, 0, "quiet runs", func(d statusreport.Document) error {
		p, err := reportedPod(d, "quiet")
		if err == nil && (p.Phase != "Running" || !p.Ready) {
			err = fmt.Errorf("quiet %+v", p)
		}
		return err
	})
	time.Sleep(5 * time.Second) // the last changes of the start sent
	n := r.count()
	const window = 45 * time.Second
	time.Sleep(window)
	docs, _ := r.since(n)
	// At most three heartbeats fit in 45 s of a 20 s ±10% period.
	if len(docs) > 3 {
		for i := 1; i < len(docs); i++ {
			if a, b := withoutTime(docs[i-1].doc), withoutTime(docs[i].doc); a != b {
				t.Logf("document %d differs from the one before:\n%s\n%s", i, a, b)
				break
			}
		}
		t.Errorf("%d documents in %v at rest, want at most 3 (the heartbeats)", len(docs), window)
	}
}
