package selfupdate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"tug/internal/atomicfile"
)

// The slots of the A/B layout.
const (
	SlotA = "a"
	SlotB = "b"
)

// StateFileName is the state file's name in the layout's directory.
const StateFileName = "state.json"

// currentLink is the symlink to the slot "tug run" executes.
const currentLink = "current"

// binName is the binary's name in a slot.
const binName = "tug"

func validSlot(s string) bool { return s == SlotA || s == SlotB }

// Other returns the slot that is not s ("" counts as neither, and gets A).
func Other(s string) string {
	if s == SlotA {
		return SlotB
	}
	return SlotA
}

// Layout is the A/B directory, <root-dir>/self.
type Layout struct{ Dir string }

// NewLayout returns the layout under rootDir.
func NewLayout(rootDir string) Layout { return Layout{Dir: filepath.Join(rootDir, "self")} }

// StateFile is the path of the state file.
func (l Layout) StateFile() string { return filepath.Join(l.Dir, StateFileName) }

// Bin is the path of slot's binary.
func (l Layout) Bin(slot string) string { return filepath.Join(l.Dir, slot, binName) }

// Current returns the slot the current link names, "" when there is
// none (the installed binary runs). A link naming anything but a slot is
// an error (and counts as none).
func (l Layout) Current() (string, error) {
	t, err := os.Readlink(filepath.Join(l.Dir, currentLink))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("selfupdate: current link: %w", err)
	}
	if !validSlot(t) {
		return "", fmt.Errorf("selfupdate: current link names %q, not a slot", t)
	}
	return t, nil
}

// SetCurrent points the current link at slot ("" removes it): a new link
// renamed over the old one, then the directory synced, so that a power
// cut leaves the old link or the new one.
func (l Layout) SetCurrent(slot string) error {
	link := filepath.Join(l.Dir, currentLink)
	if slot == "" {
		if err := os.Remove(link); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("selfupdate: %w", err)
		}
		return atomicfile.SyncDir(l.Dir)
	}
	if !validSlot(slot) {
		return fmt.Errorf("selfupdate: slot %q", slot)
	}
	if err := os.MkdirAll(l.Dir, 0o700); err != nil {
		return fmt.Errorf("selfupdate: %w", err)
	}
	tmp := link + ".tmp"
	os.Remove(tmp)
	if err := os.Symlink(slot, tmp); err != nil {
		return fmt.Errorf("selfupdate: %w", err)
	}
	if err := os.Rename(tmp, link); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("selfupdate: %w", err)
	}
	return atomicfile.SyncDir(l.Dir)
}

// Install writes bin into slot whole (temporary file, fsync, rename,
// fsync of the directory), mode 0755.
func (l Layout) Install(slot string, bin []byte) error {
	if !validSlot(slot) {
		return fmt.Errorf("selfupdate: slot %q", slot)
	}
	if err := os.MkdirAll(filepath.Join(l.Dir, slot), 0o700); err != nil {
		return fmt.Errorf("selfupdate: %w", err)
	}
	if err := atomicfile.Write(l.Bin(slot), bin, 0o755); err != nil {
		return fmt.Errorf("selfupdate: install slot %s: %w", slot, err)
	}
	return nil
}
