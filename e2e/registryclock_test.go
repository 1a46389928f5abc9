//go:build e2e

package e2e

import (
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tug/internal/podview"
	"tug/internal/testutil"
)

// TestRegistryCertificateNotValidByTheClock: a registry whose certificate
// is not valid yet by the device's clock (what a device booted in 1970
// sees of every certificate) makes the image pull and the OCI source fail
// with words that say to set the clock, in the pod's status, in tug pods
// and in the log; a certificate expired by the clock says to renew it or
// set a clock that is ahead. The registry is the test environment's
// behind a TLS front whose certificate's dates the test chooses.
func TestRegistryCertificateNotValidByTheClock(t *testing.T) {
	t.Parallel()
	reg := startRegistry(t, registryOpts{shared: true})
	image := reg.Ref("tug/busybox:1.35")
	for _, tt := range []struct {
		name        string
		from, until time.Time
		want        string
	}{
		{"not valid yet", time.Now().Add(365 * 24 * time.Hour), time.Now().Add(400 * 24 * time.Hour),
			"is before the certificate's validity (from "},
		{"expired", time.Now().Add(-400 * 24 * time.Hour), time.Now().Add(-365 * 24 * time.Hour),
			"and the device's clock reads "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			ca := testutil.NewCA(t, "registry CA")
			caFile := filepath.Join(dir, "ca.pem")
			must(t, os.WriteFile(caFile, ca.PEM, 0o644))
			regURL, _ := url.Parse("http://" + reg.Addr)
			front := httptest.NewUnstartedServer(httputil.NewSingleHostReverseProxy(regURL))
			front.TLS = &tls.Config{Certificates: []tls.Certificate{ca.ServerPairValid(t, net.ParseIP("127.0.0.1"), tt.from, tt.until)}}
			front.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes refused are the point
			front.StartTLS()
			t.Cleanup(front.Close)
			frontAddr := front.Listener.Addr().String()
			certs := filepath.Join(dir, "certs.d")
			writeHostsToml(t, certs, reg.Addr, fmt.Sprintf("server = \"https://%s\"\nca = %q\n", frontAddr, caFile))
			tg := startTug(t, tugOpts{
				args:        []string{"--manifest-oci", reg.Ref("tug/nobundle:prod"), "--oci-check-frequency", "2s", "--registry-config-dir", certs},
				beforeStart: func(tg *tug) { tg.relay(frontAddr) },
			})
			tg.writeManifest("clocked.yaml", shPod("clocked", image, idle))
			v := tg.waitPod(startTimeout, "clocked", "the pull failing with the certificate's dates in words", func(v *podview.View) error {
				cs := mainStatus(v)
				if cs.State.Waiting == nil || !strings.Contains(cs.State.Waiting.Message, tt.want) {
					return fmt.Errorf("container state %+v, want waiting with %q", cs.State, tt.want)
				}
				return nil
			})
			t.Logf("pull: %s", mainStatus(&v).State.Waiting.Message)
			if out, _, code := tg.runCLI("pods"); code != 0 || !strings.Contains(out, tt.want) {
				t.Errorf("tug pods (exit %d) does not say %q:\n%s", code, tt.want, out)
			}
			tg.waitForOutput(startTimeout, "oci://"+reg.Ref("tug/nobundle:prod"), tt.want)
		})
	}
}
