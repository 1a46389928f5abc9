package timefloor

import (
	"crypto/x509"
	"errors"
	"fmt"
	"time"
)

// ExplainTLS returns err with words added when its cause is a peer's
// certificate that is not valid yet at now, which on a device is nearly
// always a clock behind (1970 after a boot without a real-time clock):
// "the device's clock (1970-01-01T00:00:05Z) is before the certificate's
// validity (from 2026-01-01T00:00:00Z): set the clock". Any other error is
// returned as it is.
func ExplainTLS(err error, now time.Time) error {
	var invalid x509.CertificateInvalidError
	if !errors.As(err, &invalid) || invalid.Reason != x509.Expired || invalid.Cert == nil || !now.Before(invalid.Cert.NotBefore) {
		return err
	}
	return fmt.Errorf("the device's clock (%s) is before the certificate's validity (from %s): set the clock: %w",
		now.UTC().Format(time.RFC3339), invalid.Cert.NotBefore.UTC().Format(time.RFC3339), err)
}
