package registry

import (
	"context"
	"io"
	"net/http"
)

// transport is one registry host's HTTP transport: it tells its observer
// of each answer and caps its response bodies with the Registry's bucket.
type transport struct {
	base    http.RoundTripper
	bucket  *bucket // nil: no cap
	served  Served  // what an answer of this host is
	observe Observer
}

// RoundTrip implements http.RoundTripper.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if t.observe != nil && resp.StatusCode/100 == 2 && (req.Method == http.MethodGet || req.Method == http.MethodHead) {
		t.observe(t.served)
	}
	if t.bucket != nil && resp.Body != nil && resp.Body != http.NoBody {
		resp.Body = &limitedBody{body: resp.Body, bucket: t.bucket, ctx: req.Context()}
	}
	return resp, nil
}

// limitedBody reads a response body no faster than its bucket allows. The
// context is the request's: a pull that is cut stops waiting.
type limitedBody struct {
	body   io.ReadCloser
	bucket *bucket
	ctx    context.Context
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if len(p) > b.bucket.burst {
		p = p[:b.bucket.burst]
	}
	n, err := b.body.Read(p)
	if n > 0 {
		if werr := b.bucket.wait(b.ctx, n); werr != nil {
			return n, werr
		}
	}
	return n, err
}

func (b *limitedBody) Close() error { return b.body.Close() }
