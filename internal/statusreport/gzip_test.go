package statusreport

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// gzipEndpoint records each request's Content-Encoding and body size, and
// answers 415 to a gzip body when it refuses gzip.
type gzipEndpoint struct {
	refuseGzip bool

	mu        sync.Mutex
	encodings []string
	sizes     []int
	docs      []Document
}

func (g *gzipEndpoint) RoundTrip(r *http.Request) (*http.Response, error) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	enc := r.Header.Get("Content-Encoding")
	g.mu.Lock()
	defer g.mu.Unlock()
	g.encodings = append(g.encodings, enc)
	g.sizes = append(g.sizes, len(raw))
	code := http.StatusNoContent
	if enc == "gzip" && g.refuseGzip {
		code = http.StatusUnsupportedMediaType
	} else {
		r.Body = io.NopCloser(strings.NewReader(string(raw)))
		body, err := readBody(r)
		if err != nil {
			return nil, err
		}
		var d Document
		if err := json.Unmarshal(body, &d); err != nil {
			return nil, fmt.Errorf("body (encoding %q) is no document: %w", enc, err)
		}
		g.docs = append(g.docs, d)
	}
	return &http.Response{StatusCode: code, Status: http.StatusText(code), Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
}

// TestSenderGzip: documents go gzip-compressed (Content-Encoding: gzip)
// and decode to the document, a fraction of its JSON; a receiver that
// answers 415 to gzip gets the same document uncompressed at once and
// every later one uncompressed; Uncompressed sends none compressed.
func TestSenderGzip(t *testing.T) {
	tests := []struct {
		name         string
		uncompressed bool
		refuseGzip   bool
		want         []string // Content-Encoding of each request, two sends
	}{
		{name: "gzip", want: []string{"gzip", "gzip"}},
		{name: "receiver refuses gzip", refuseGzip: true, want: []string{"gzip", "", ""}},
		{name: "uncompressed", uncompressed: true, want: []string{"", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := &fakeState{}
			var names []string
			for i := range 30 {
				names = append(names, fmt.Sprintf("pod-%02d", i))
			}
			state.set(names...)
			ep := &gzipEndpoint{refuseGzip: tt.refuseGzip}
			s, err := New(Config{URL: "https://fleet.example/status", Client: &http.Client{Transport: ep}, Status: state, NodeName: "kiosk-1", Uncompressed: tt.uncompressed})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 2 {
				if err := s.send(context.Background(), s.build()); err != nil {
					t.Fatalf("send %d: %v", i, err)
				}
			}
			ep.mu.Lock()
			defer ep.mu.Unlock()
			if strings.Join(ep.encodings, ",") != strings.Join(tt.want, ",") {
				t.Errorf("Content-Encoding of the requests %q, want %q", ep.encodings, tt.want)
			}
			if len(ep.docs) != 2 || podNames(ep.docs[1]) != strings.Join(names, ",") {
				t.Fatalf("receiver decoded %d documents, want 2 of the 30 pods", len(ep.docs))
			}
			plain, err := json.Marshal(s.build())
			if err != nil {
				t.Fatal(err)
			}
			last := ep.sizes[len(ep.sizes)-1]
			if tt.want[len(tt.want)-1] == "gzip" && last*4 > len(plain) {
				t.Errorf("gzip body %d bytes, JSON %d: want under a quarter", last, len(plain))
			}
		})
	}
}
