package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"tug/internal/pod"
	"tug/internal/podview"
)

// fakeStatus is a StatusSource with settable state.
type fakeStatus struct {
	pods      []podview.View
	manifests []podview.ManifestStatus
}

func (f *fakeStatus) Pods() []podview.View                { return slices.Clone(f.pods) }
func (f *fakeStatus) Manifests() []podview.ManifestStatus { return slices.Clone(f.manifests) }

// fakeHealth is a HealthChecker that returns err.
type fakeHealth struct{ err error }

func (f fakeHealth) Healthy(context.Context) error { return f.err }

func podView(ns, name, manifestName, uid string, phase pod.Phase) podview.View {
	v := podview.View{APIVersion: "v1", Kind: "Pod", Status: pod.Status{Phase: phase}}
	v.Metadata = pod.ObjectMeta{Namespace: ns, Name: name, ManifestName: manifestName, UID: uid}
	return v
}

func testStatus() *fakeStatus {
	return &fakeStatus{
		pods: []podview.View{
			podView("default", "web-edge1", "web", "uid-web", pod.PhaseRunning),
			podView("kube-system", "dns-edge1", "dns", "uid-dns", pod.PhasePending),
			podView("default", "api-edge1", "api", "uid-api", pod.PhaseRunning),
			// The same manifest name from two sources.
			podView("other", "twin-edge1", "twin", "uid-a", pod.PhaseRunning),
			podView("other", "twin-edge1", "twin", "uid-b", pod.PhaseFailed),
		},
		manifests: []podview.ManifestStatus{
			{Source: "file:/etc/tug/manifests", File: "/etc/tug/manifests/web.yaml", UIDs: []string{"uid-web"}},
			{Source: "file:/etc/tug/manifests", File: "/etc/tug/manifests/broken.yaml",
				Error: "/etc/tug/manifests/broken.yaml:8:7: spec.containers[0].imagee: unknown field"},
		},
	}
}

func serve(t *testing.T, h http.Handler, path string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec
}

func decodeBody(t *testing.T, rec *httptest.ResponseRecorder, v any) {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil {
		t.Fatalf("decode %s: %v", rec.Body.String(), err)
	}
}

func TestListPods(t *testing.T) {
	s := &Server{Status: testStatus()}
	rec := serve(t, s.Handler(), "/pods")
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /pods = %d, want 200: %s", rec.Code, rec.Body.String())
	}
	var l podview.List
	decodeBody(t, rec, &l)
	if l.APIVersion != "v1" || l.Kind != "PodList" {
		t.Errorf("apiVersion, kind = %q, %q; want v1, PodList", l.APIVersion, l.Kind)
	}
	var got []string
	for _, v := range l.Items {
		got = append(got, v.Metadata.Namespace+"/"+v.Metadata.Name+"/"+v.Metadata.UID)
	}
	want := []string{"default/api-edge1/uid-api", "default/web-edge1/uid-web", "kube-system/dns-edge1/uid-dns",
		"other/twin-edge1/uid-a", "other/twin-edge1/uid-b"}
	if !slices.Equal(got, want) {
		t.Errorf("items = %v, want %v", got, want)
	}
}

func TestListPodsEmpty(t *testing.T) {
	rec := serve(t, (&Server{}).Handler(), "/pods")
	if !strings.Contains(rec.Body.String(), `"items": []`) {
		t.Errorf("an empty list should have items: [], got %s", rec.Body.String())
	}
}

func TestGetPod(t *testing.T) {
	tests := []struct {
		name     string
		path     string
		wantCode int
		wantUID  string
		wantErr  string // part of the error message
	}{
		{"static name", "/pods/default/web-edge1", 200, "uid-web", ""},
		{"manifest name", "/pods/default/web", 200, "uid-web", ""},
		{"other namespace", "/pods/kube-system/dns", 200, "uid-dns", ""},
		{"wrong namespace", "/pods/default/dns", 404, "", `pod "dns" not found in namespace "default"`},
		{"absent", "/pods/default/nope", 404, "", `pod "nope" not found`},
		{"ambiguous static name", "/pods/other/twin-edge1", 409, "", "matches 2 pods"},
		{"ambiguous manifest name", "/pods/other/twin", 409, "", "uid-a"},
	}
	s := &Server{Status: testStatus()}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := serve(t, s.Handler(), tt.path)
			if rec.Code != tt.wantCode {
				t.Fatalf("GET %s = %d, want %d: %s", tt.path, rec.Code, tt.wantCode, rec.Body.String())
			}
			if tt.wantCode != 200 {
				var e errorBody
				decodeBody(t, rec, &e)
				if !strings.Contains(e.Error, tt.wantErr) || strings.Contains(e.Error, "api:") {
					t.Errorf("error = %q, want it to contain %q and no package prefix", e.Error, tt.wantErr)
				}
				return
			}
			var v podview.View
			decodeBody(t, rec, &v)
			if v.Metadata.UID != tt.wantUID {
				t.Errorf("uid = %q, want %q", v.Metadata.UID, tt.wantUID)
			}
		})
	}
}

func TestListManifests(t *testing.T) {
	rec := serve(t, (&Server{Status: testStatus()}).Handler(), "/manifests")
	var l struct {
		Items []podview.ManifestStatus `json:"items"`
	}
	decodeBody(t, rec, &l)
	if len(l.Items) != 2 || l.Items[0].File != "/etc/tug/manifests/broken.yaml" || !strings.Contains(l.Items[0].Error, "imagee") {
		t.Errorf("manifests = %+v, want broken.yaml (with its error) then web.yaml", l.Items)
	}
}

func TestHealth(t *testing.T) {
	tests := []struct {
		name     string
		health   HealthChecker
		wantCode int
		wantBody string
	}{
		{"no checker", nil, 200, "ok\n"},
		{"healthy", fakeHealth{}, 200, "ok\n"},
		{"unhealthy", fakeHealth{errors.New("pleg: no relist for 3m10s")}, 500, "pleg: no relist for 3m10s\n"},
	}
	for _, tt := range tests {
		s := &Server{Health: tt.health}
		for _, h := range []http.Handler{s.Handler(), s.HealthHandler()} {
			for _, path := range []string{"/healthz", "/readyz"} {
				t.Run(tt.name+path, func(t *testing.T) {
					rec := serve(t, h, path)
					if rec.Code != tt.wantCode || rec.Body.String() != tt.wantBody {
						t.Errorf("GET %s = %d %q, want %d %q", path, rec.Code, rec.Body.String(), tt.wantCode, tt.wantBody)
					}
				})
			}
		}
	}
}

func TestHealthHandlerHasNoPods(t *testing.T) {
	h := (&Server{Status: testStatus()}).HealthHandler()
	for _, path := range []string{"/pods", "/pods/default/web", "/manifests"} {
		if rec := serve(t, h, path); rec.Code != http.StatusNotFound {
			t.Errorf("health handler: GET %s = %d, want 404", path, rec.Code)
		}
	}
}

func TestMethodNotAllowed(t *testing.T) {
	rec := httptest.NewRecorder()
	(&Server{}).Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/pods", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /pods = %d, want 405", rec.Code)
	}
}

func TestMetrics(t *testing.T) {
	rec := serve(t, (&Server{Status: testStatus()}).HealthHandler(), "/metrics")
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("GET /metrics = %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	for _, line := range []string{
		`tug_pods{phase="Running"} 3`,
		`tug_pods{phase="Pending"} 1`,
		`tug_pods{phase="Failed"} 1`,
		`tug_pods{phase="Succeeded"} 0`,
		"# TYPE tug_manifest_errors gauge",
		"tug_manifests 2",
		"tug_manifest_errors 1",
	} {
		if !strings.Contains(rec.Body.String(), line+"\n") {
			t.Errorf("/metrics lacks %q:\n%s", line, rec.Body.String())
		}
	}
}
