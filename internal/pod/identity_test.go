package pod

import "testing"

func TestHostnameAndFQDN(t *testing.T) {
	long := "a234567890123456789012345678901234567890123456789012345678901234567890"
	tests := []struct {
		name               string
		spec               PodSpec
		wantHost, wantFQDN string
	}{
		{name: "pod name", wantHost: "web-node1"},
		{name: "hostname", spec: PodSpec{Hostname: "db"}, wantHost: "db"},
		{name: "subdomain", spec: PodSpec{Hostname: "db", Subdomain: "sub"}, wantHost: "db", wantFQDN: "db.sub.default.svc.cluster.local"},
		{name: "as FQDN", spec: PodSpec{Hostname: "db", Subdomain: "sub", SetHostnameAsFQDN: new(true)},
			wantHost: "db.sub.default.svc.cluster.local", wantFQDN: "db.sub.default.svc.cluster.local"},
		{name: "long name", spec: PodSpec{Hostname: long}, wantHost: long[:63]},
		{name: "override", spec: PodSpec{HostnameOverride: new("cam.plant-7.example")}, wantHost: "cam.plant-7.example"},
		{name: "override over hostname and subdomain", spec: PodSpec{Hostname: "db", Subdomain: "sub", HostnameOverride: new("cam.example")},
			wantHost: "cam.example"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Pod{Metadata: ObjectMeta{Name: "web-node1", Namespace: "default"}, Spec: tt.spec}
			if got := p.Hostname(); got != tt.wantHost {
				t.Errorf("Hostname() = %q, want %q", got, tt.wantHost)
			}
			if got := p.FQDN(); got != tt.wantFQDN {
				t.Errorf("FQDN() = %q, want %q", got, tt.wantFQDN)
			}
		})
	}
}
