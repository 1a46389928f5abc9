package main

import (
	"bytes"
	"os"
)

// appArmorEnabled reports whether the kernel enforces AppArmor profiles
// (/sys/module/apparmor/parameters/enabled is Y), as runc checks it.
func appArmorEnabled() bool {
	b, err := os.ReadFile("/sys/module/apparmor/parameters/enabled")
	return err == nil && bytes.HasPrefix(b, []byte("Y"))
}
