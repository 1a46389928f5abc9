package main

import (
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"tug/internal/bundle"
	"tug/internal/config"
	"tug/internal/podstatus"
	"tug/internal/rollout"
	"tug/internal/source"
	"tug/internal/statusreport"
)

var (
	_ statusreport.StatusSource  = podstatus.Served{}
	_ statusreport.NodeSource    = nodeView{}
	_ statusreport.RolloutSource = (*rollout.Controller)(nil)
)

// statusLink is what --status-url takes from files: the client with its
// TLS configuration, the headers and the signer. It is read at start, with
// the other files, so that a bad one fails before the host is changed.
type statusLink struct {
	client *http.Client
	header http.Header
	signer *statusreport.Signer
}

// newStatusLink reads the files of --status-url. The signer's sequence
// file is <root-dir>/status/sequence.
func newStatusLink(cfg config.Config, hostname string, log *slog.Logger) (*statusLink, error) {
	tlsCfg, err := source.ClientTLS(source.TLSFiles{CA: cfg.StatusURLCA, ClientCert: cfg.StatusURLClientCert, ClientKey: cfg.StatusURLClientKey})
	if err != nil {
		return nil, fmt.Errorf("status URL %w", err)
	}
	l := &statusLink{client: statusreport.NewClient(tlsCfg, keepIdle(cfg.StatusFrequency)), header: http.Header{}}
	if cfg.StatusURLHeaderFile != "" {
		if l.header, err = readHeaderFile(cfg.StatusURLHeaderFile, "status URL", log); err != nil {
			return nil, err
		}
	}
	if cfg.StatusSigningKey != "" {
		data, err := os.ReadFile(cfg.StatusSigningKey)
		if err != nil {
			return nil, fmt.Errorf("status signing key: %w", err)
		}
		key, err := bundle.ParsePrivateKey(data)
		if err != nil {
			return nil, fmt.Errorf("status signing key %s: %w", cfg.StatusSigningKey, err)
		}
		if l.signer, err = statusreport.NewSigner(key, hostname, filepath.Join(cfg.RootDir, "status", "sequence"), time.Now(), log); err != nil {
			return nil, err
		}
		log.Info("status documents are signed", "fingerprint", l.signer.Fingerprint())
	}
	return l, nil
}

// sender builds the --status-url sender over what the API reads.
func (l *statusLink) sender(cfg config.Config, hostname string, status statusreport.StatusSource, node statusreport.NodeSource,
	rollouts statusreport.RolloutSource, self func() *statusreport.SelfUpdate, reg prometheus.Registerer, hold func() bool, log *slog.Logger) (*statusreport.Sender, error) {
	return statusreport.New(statusreport.Config{
		URL:          cfg.StatusURL,
		Client:       l.client,
		Header:       l.header,
		Signer:       l.signer,
		Frequency:    cfg.StatusFrequency,
		Uncompressed: cfg.StatusCompression == "none",
		Status:       status,
		Node:         node,
		Rollouts:     rollouts,
		NodeName:     hostname,
		TugVersion:   buildVersion(),
		SelfUpdate:   self,
		Registerer:   reg,
		Log:          log,
		Hold:         hold,
	})
}

// readHeaderFile reads a "Name: Value" header file (see
// source.ReadHeaderFile) and warns when other users may read it. what
// names the URL it is for in the warning; the values are never logged.
func readHeaderFile(path, what string, log *slog.Logger) (http.Header, error) {
	h, err := source.ReadHeaderFile(path)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		log.Warn("the "+what+" header file is readable by other users; make it 0600", "file", path, "mode", fi.Mode().Perm())
	}
	return h, nil
}
