package timefloor

import (
	"crypto/x509"
	"errors"
	"fmt"
	"time"
)

// ExplainTLS returns err with words added when its cause is a peer's
// certificate that is not valid at now by its dates. Not valid yet is on a
// device nearly always a clock behind (1970 after a boot without a
// real-time clock): "the device's clock (1970-01-01T00:00:05Z) is before
// the certificate's validity (from 2026-01-01T00:00:00Z): set the clock".
// Expired may be a clock ahead (a real-time clock set wrong) as well as a
// certificate to renew, and the words say both: "the certificate expired
// at 2027-01-01T00:00:00Z and the device's clock reads
// 2028-01-01T00:00:00Z: renew the certificate, or set the clock if it is
// ahead". Any other error is returned as it is.
func ExplainTLS(err error, now time.Time) error {
	var invalid x509.CertificateInvalidError
	if !errors.As(err, &invalid) || invalid.Reason != x509.Expired || invalid.Cert == nil {
		return err
	}
	switch {
	case now.Before(invalid.Cert.NotBefore):
		return fmt.Errorf("the device's clock (%s) is before the certificate's validity (from %s): set the clock: %w",
			now.UTC().Format(time.RFC3339), invalid.Cert.NotBefore.UTC().Format(time.RFC3339), err)
	case now.After(invalid.Cert.NotAfter):
		return fmt.Errorf("the certificate expired at %s and the device's clock reads %s: renew the certificate, or set the clock if it is ahead: %w",
			invalid.Cert.NotAfter.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339), err)
	}
	return err
}
