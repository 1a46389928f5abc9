package testutil

import (
	"context"
	"log/slog"
	"os"
	"slices"
	"sync"
	"testing"
)

// Damage is a way a power cut (or a bad disk) leaves a state file.
type Damage string

// The kinds of damage every state file tug reads at start is tested
// against (docs/damaged-files.md).
const (
	DamageMissing   Damage = "missing"    // the file is gone
	DamageEmpty     Damage = "empty"      // truncated to zero, as ext4 leaves a file renamed before its data reached the disk
	DamageNULFilled Damage = "nul-filled" // its length kept, its bytes zero
	DamageTruncated Damage = "truncated"  // cut in the middle
	DamageGarbage   Damage = "garbage"    // bytes that are no encoding tug writes
)

// Damages is every Damage, in a fixed order, for table-driven tests.
var Damages = []Damage{DamageMissing, DamageEmpty, DamageNULFilled, DamageTruncated, DamageGarbage}

// DamageFile damages the file at path in the way d says. The file must
// exist (for DamageMissing too: it is removed).
func DamageFile(t testing.TB, path string, d Damage) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("damage %s: %v", path, err)
	}
	switch d {
	case DamageMissing:
		err = os.Remove(path)
	case DamageEmpty:
		err = os.Truncate(path, 0)
	case DamageNULFilled:
		err = os.WriteFile(path, make([]byte, len(data)), 0o600)
	case DamageTruncated:
		err = os.Truncate(path, int64(len(data)/2))
	case DamageGarbage:
		err = os.WriteFile(path, []byte("\xff\xfe}{ not tug's \x00\x01"), 0o600)
	default:
		t.Fatalf("damage %s: unknown kind %q", path, d)
	}
	if err != nil {
		t.Fatalf("damage %s (%s): %v", path, d, err)
	}
}

// WarnLog is a logger that records the "file" of every Warn it is given
// (and passes every record to t.Log).
type WarnLog struct {
	*slog.Logger
	mu    sync.Mutex
	files []string
}

// NewWarnLog returns a WarnLog writing through t.Log.
func NewWarnLog(t testing.TB) *WarnLog {
	w := &WarnLog{}
	w.Logger = slog.New(&warnHandler{w: w, next: Logger(t).Handler()})
	return w
}

// Files returns the "file" of each Warn so far, in order.
func (w *WarnLog) Files() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.files)
}

type warnHandler struct {
	w     *WarnLog
	attrs []slog.Attr
	next  slog.Handler
}

func (h *warnHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *warnHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelWarn {
		file := ""
		for _, a := range h.attrs {
			if a.Key == "file" {
				file = a.Value.String()
			}
		}
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "file" {
				file = a.Value.String()
			}
			return true
		})
		h.w.mu.Lock()
		h.w.files = append(h.w.files, file)
		h.w.mu.Unlock()
	}
	return h.next.Handle(ctx, r)
}

func (h *warnHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &warnHandler{w: h.w, attrs: append(slices.Clone(h.attrs), as...), next: h.next.WithAttrs(as)}
}

func (h *warnHandler) WithGroup(name string) slog.Handler {
	return &warnHandler{w: h.w, attrs: h.attrs, next: h.next.WithGroup(name)}
}
