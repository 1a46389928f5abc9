package timefloor

import (
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestExplainTLS(t *testing.T) {
	cert := &x509.Certificate{NotBefore: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), NotAfter: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)}
	notYet := fmt.Errorf("Post: tls: %w", x509.CertificateInvalidError{Cert: cert, Reason: x509.Expired})
	other := errors.New("connection refused")
	tests := []struct {
		name string
		err  error
		now  time.Time
		want string // "" : the error unchanged
	}{
		{"1970: not yet valid", notYet, time.Unix(5, 0), "the device's clock (1970-01-01T00:00:05Z) is before the certificate's validity (from 2026-01-01T00:00:00Z): set the clock"},
		{"expired: a clock ahead or a certificate to renew", notYet, time.Date(2028, 1, 1, 0, 0, 0, 0, time.UTC),
			"the certificate expired at 2027-01-01T00:00:00Z and the device's clock reads 2028-01-01T00:00:00Z: renew the certificate, or set the clock if it is ahead"},
		{"within its dates (the verifier saw another time)", notYet, time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), ""},
		{"another reason", x509.CertificateInvalidError{Cert: cert, Reason: x509.NotAuthorizedToSign}, time.Unix(5, 0), ""},
		{"not a certificate error", other, time.Unix(5, 0), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ExplainTLS(tt.err, tt.now)
			if tt.want == "" {
				if got != tt.err {
					t.Errorf("ExplainTLS = %v, want the error unchanged", got)
				}
				return
			}
			if !strings.HasPrefix(got.Error(), tt.want) || !errors.Is(got, tt.err) {
				t.Errorf("ExplainTLS = %q, want it to start with %q and wrap the cause", got, tt.want)
			}
		})
	}
}
