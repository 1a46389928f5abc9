package source

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tug/internal/testutil"
)

func TestReadHeaderFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "h")
	os.WriteFile(good, []byte("# fleet credentials\nAuthorization: Bearer s3cret:with:colons\n\n  X-Device : d1 \n"), 0o600)
	h, err := ReadHeaderFile(good)
	if err != nil {
		t.Fatal(err)
	}
	if h.Get("Authorization") != "Bearer s3cret:with:colons" || h.Get("X-Device") != "d1" || len(h) != 2 {
		t.Fatalf("headers %v", h)
	}
	bad := filepath.Join(dir, "bad")
	os.WriteFile(bad, []byte("Authorization: ok\nBearer s3cret\n"), 0o600)
	_, err = ReadHeaderFile(bad)
	if err == nil || !strings.Contains(err.Error(), ":2:") || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("bad line: %v (want the line number, never the text)", err)
	}
	if _, err := ReadHeaderFile(filepath.Join(dir, "none")); err == nil {
		t.Fatal("missing file: no error")
	}
}

func TestHTTPSecretsNeverShown(t *testing.T) {
	const secret = "s3cretZZ"
	f := newHTTPFixture(t, podManifest("web", "nginx:1"), func(c *HTTPConfig) {
		c.URL = strings.Replace(c.URL, "http://", "http://fleet:"+secret+"@", 1) + "?token=" + secret
		c.Header = http.Header{"Authorization": {"Bearer " + secret}}
	})
	f.poll()
	f.wantPods("nginx:1")
	f.srv.mu.Lock()
	gotAuth := f.srv.gotHdr.Get("Authorization")
	f.srv.mu.Unlock()
	if gotAuth != "Bearer "+secret {
		t.Fatalf("the header was not sent: %q", gotAuth)
	}
	m, _ := f.lastGood()
	if strings.Contains(f.h.Name(), secret) || strings.Contains(m.Pods[0].Metadata.Source, secret) || !strings.Contains(f.h.Name(), "token=xxxxx") {
		t.Fatalf("name %q, pod source %q", f.h.Name(), m.Pods[0].Metadata.Source)
	}
	// Each kind of failure: errors and logs hold no secret.
	f.srv.set(func(s *manifestServer) { s.delay = 2 * time.Second })
	f.poll()
	timeoutErr := f.h.Status().Error
	f.srv.set(func(s *manifestServer) { s.delay, s.status = 0, 500 })
	f.poll()
	f.ts.Close()
	f.poll()
	refusedErr := f.h.Status().Error
	ckpt, _ := os.ReadFile(f.ckpt)
	for what, text := range map[string]string{
		"timeout error": timeoutErr, "refused error": refusedErr, "logs": f.logs.String(),
		"checkpoint": string(ckpt), "sets": setErrors(f.sink),
	} {
		if strings.Contains(text, secret) {
			t.Errorf("%s shows the secret: %s", what, text)
		}
	}
	if !strings.Contains(timeoutErr, "Timeout") || !strings.Contains(refusedErr, "refused") {
		t.Errorf("errors lost their cause: %q, %q", timeoutErr, refusedErr)
	}
}

func TestHTTPRedirects(t *testing.T) {
	const secret = "s3cretZZ"
	body := podManifest("web", "nginx:1")
	var got http.Header
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		w.Write([]byte(body))
	}))
	defer other.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("/pods.yaml", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/hop/1", http.StatusFound)
	})
	mux.HandleFunc("/hop/{n}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/hop/"+r.PathValue("n")+"1", http.StatusFound)
	})
	mux.HandleFunc("/same", func(w http.ResponseWriter, r *http.Request) { got = r.Header.Clone(); w.Write([]byte(body)) })
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, other.URL+"/p", http.StatusFound) })
	ts := httptest.NewServer(mux)
	defer ts.Close()
	tlsMux := http.NewServeMux()
	tlsMux.HandleFunc("/down", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, ts.URL+"/same", http.StatusFound) })
	tlsTS := httptest.NewTLSServer(tlsMux)
	defer tlsTS.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsTS.Certificate().Raw}), 0o600)

	hdr := http.Header{"X-Fleet-Token": {secret}, "Cookie": {"s=" + secret}}
	tests := []struct {
		name    string
		url     string
		ok      bool
		err     string
		headers bool // the custom headers reach the final server
	}{
		{"same host", ts.URL + "/pods.yaml?to=same", false, "redirects", false},
		{"other host", strings.Replace(ts.URL, "http://", "http://fleet:pw@", 1) + "/away?token=" + secret, true, "", false},
		{"https to http", tlsTS.URL + "/down", false, "https to", false},
		{"same origin keeps headers", ts.URL + "/short", true, "", true},
	}
	mux.HandleFunc("/short", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/same", http.StatusFound) })
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got = nil
			sink := newFakeSink()
			h, err := NewHTTP(HTTPConfig{URL: tc.url, Header: hdr, Timeout: 2 * time.Second, CAFile: ca}, sink)
			if err != nil {
				t.Fatal(err)
			}
			h.start(context.Background())
			h.poll(context.Background())
			st := h.Status()
			if tc.ok != (st.Error == "") || !strings.Contains(st.Error, tc.err) {
				t.Fatalf("status error %q, want ok=%v containing %q", st.Error, tc.ok, tc.err)
			}
			if !tc.ok && len(sink.history()) != 0 {
				t.Fatal("a refused redirect made the source ready")
			}
			if tc.ok && (got.Get("X-Fleet-Token") == secret) != tc.headers {
				t.Fatalf("headers at the final server: %v, want them: %v", got, tc.headers)
			}
			if tc.ok && strings.Contains(got.Get("Referer"), secret) {
				t.Fatalf("the query went on in the Referer: %v", got)
			}
			if tc.ok && !tc.headers && (got.Get("Authorization") != "" || got.Get("Cookie") != "") {
				t.Fatalf("Authorization or Cookie sent to another host: %v", got)
			}
		})
	}
}

func TestHTTPClientCertAndCAReplace(t *testing.T) {
	dir := t.TempDir()
	ca1 := testutil.NewCA(t, "ca1")
	ca2 := testutil.NewCA(t, "ca2")
	ca1File := filepath.Join(dir, "ca1.pem")
	if err := os.WriteFile(ca1File, ca1.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	clientCert, clientKey := ca1.Issue(t, dir, "client", nil)
	body := podManifest("web", "nginx:1")
	start := func(ca *testutil.CA) string {
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(body)) }))
		pair := ca.ServerPair(t, net.ParseIP("127.0.0.1"))
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(ca1.PEM)
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
		srv.StartTLS()
		t.Cleanup(srv.Close)
		return srv.URL + "/pods.yaml"
	}
	byCA1, byCA2 := start(ca1), start(ca2)
	tests := []struct {
		name string
		cfg  HTTPConfig
		ok   bool
	}{
		{"client cert, CA replaces", HTTPConfig{URL: byCA1, CAFile: ca1File, CAReplace: true, ClientCert: clientCert, ClientKey: clientKey}, true},
		{"client cert, CA appended", HTTPConfig{URL: byCA1, CAFile: ca1File, ClientCert: clientCert, ClientKey: clientKey}, true},
		{"no client cert", HTTPConfig{URL: byCA1, CAFile: ca1File, CAReplace: true}, false},
		{"server of another CA", HTTPConfig{URL: byCA2, CAFile: ca1File, CAReplace: true, ClientCert: clientCert, ClientKey: clientKey}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Timeout = 2 * time.Second
			sink := newFakeSink()
			h, err := NewHTTP(tc.cfg, sink)
			if err != nil {
				t.Fatal(err)
			}
			h.start(context.Background())
			h.poll(context.Background())
			st := h.Status()
			if tc.ok != (st.Error == "") || tc.ok != (len(sink.history()) == 1) {
				t.Fatalf("ok %v: status %+v, %d sets", tc.ok, st, len(sink.history()))
			}
		})
	}
}

// setErrors returns the errors of every Set sink received.
func setErrors(s *fakeSink) string {
	var b strings.Builder
	for _, snap := range s.history() {
		for _, m := range snap.files {
			if m.Err != nil {
				b.WriteString(m.Err.Error() + "\n")
			}
			b.WriteString(m.Source + " " + m.File + "\n")
		}
	}
	return b.String()
}
