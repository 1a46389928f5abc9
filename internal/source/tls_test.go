package source

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tug/internal/testutil"
)

func TestClientTLS(t *testing.T) {
	dir := t.TempDir()
	ca := testutil.NewCA(t, "fleet CA")
	caFile := filepath.Join(dir, "ca.pem")
	os.WriteFile(caFile, ca.PEM, 0o600)
	notPEM := filepath.Join(dir, "not.pem")
	os.WriteFile(notPEM, []byte("hello"), 0o600)
	cert, key := ca.Issue(t, dir, "device", nil)
	tests := []struct {
		name    string
		files   TLSFiles
		wantErr string
	}{
		{name: "system roots", files: TLSFiles{}},
		{name: "CA and client certificate", files: TLSFiles{CA: caFile, CAReplace: true, ClientCert: cert, ClientKey: key}},
		{name: "replace without a CA", files: TLSFiles{CAReplace: true}, wantErr: "CA: replacing the system roots needs a CA file"},
		{name: "missing CA", files: TLSFiles{CA: filepath.Join(dir, "none.pem")}, wantErr: "CA: open"},
		{name: "CA with no certificate", files: TLSFiles{CA: notPEM}, wantErr: "no PEM certificate"},
		{name: "certificate without key", files: TLSFiles{ClientCert: cert}, wantErr: "give both"},
		{name: "key that is not the certificate's", files: TLSFiles{ClientCert: cert, ClientKey: notPEM}, wantErr: "client certificate:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ClientTLS(tt.files)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (c.RootCAs != nil) != (tt.files.CA != "") || len(c.Certificates) != map[bool]int{true: 1}[tt.files.ClientCert != ""] {
				t.Errorf("config %+v", c)
			}
		})
	}
}
