package source

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// TLSFiles names the files of an HTTPS client's TLS configuration: the
// manifest URL's (--manifest-url-ca, --manifest-url-client-cert, ...) and
// the status URL's (--status-url-ca, ...) are read by ClientTLS alike.
type TLSFiles struct {
	// CA is a PEM bundle added to the system roots, or that replaces
	// them when CAReplace is set; "" for the system roots alone.
	CA        string
	CAReplace bool
	// ClientCert and ClientKey are PEM files of the client certificate
	// (mTLS); both or neither.
	ClientCert, ClientKey string
}

// sessionCacheSize is how many TLS sessions a client configuration keeps
// for resumption: one server each, a few for redirects.
const sessionCacheSize = 4

// ClientTLS builds a TLS client configuration from f: TLS 1.2 at least,
// the CA file added to the system roots or replacing them, the client
// certificate, and a cache of TLS sessions to resume. Its errors start with what failed ("CA: ...", "client
// certificate: ...") for the caller to prefix with the URL they are for;
// they never hold a key's bytes.
func ClientTLS(f TLSFiles) (*tls.Config, error) {
	// The session cache lets a new connection resume the last TLS session:
	// on a link paid by the byte, the server's certificate chain is not
	// sent again at each reconnection (an idle connection is closed
	// between two polls or heartbeats far apart).
	c := &tls.Config{MinVersion: tls.VersionTLS12, ClientSessionCache: tls.NewLRUClientSessionCache(sessionCacheSize)}
	if f.CAReplace && f.CA == "" {
		return nil, errors.New("CA: replacing the system roots needs a CA file")
	}
	if f.CA != "" {
		pem, err := os.ReadFile(f.CA)
		if err != nil {
			return nil, fmt.Errorf("CA: %w", err)
		}
		var pool *x509.CertPool
		if !f.CAReplace {
			pool, _ = x509.SystemCertPool()
		}
		if pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA %s: no PEM certificate", f.CA)
		}
		c.RootCAs = pool
	}
	if (f.ClientCert == "") != (f.ClientKey == "") {
		return nil, errors.New("client certificate: give both the certificate and the key")
	}
	if f.ClientCert != "" {
		pair, err := tls.LoadX509KeyPair(f.ClientCert, f.ClientKey)
		if err != nil {
			return nil, fmt.Errorf("client certificate: %w", err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c, nil
}
