package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// userNSBlock is the IDs of one pod's user namespace (userns.BlockSize;
// config imports no runtime package, so the rule is repeated here and
// tested against userns.ParseRange in agent/).
const userNSBlock = 65536

// validUserNamespaceRange checks --user-namespace-range: "" (the host's
// entry for tug, else the default) or "FIRST/LENGTH", both multiples of
// 65536, FIRST at least 65536, ending at or below 4294901760 (the top
// block holds (uid_t)-1).
func validUserNamespaceRange(s string) error {
	if s == "" {
		return nil
	}
	first, length, ok := strings.Cut(s, "/")
	if !ok {
		return fmt.Errorf("%q is not FIRST/LENGTH", s)
	}
	f, err1 := strconv.ParseUint(first, 10, 32)
	l, err2 := strconv.ParseUint(length, 10, 64)
	switch {
	case err1 != nil || err2 != nil:
		return fmt.Errorf("%q: %w", s, errors.Join(err1, err2))
	case f < userNSBlock || f%userNSBlock != 0:
		return fmt.Errorf("%q: the first ID must be a multiple of %d, at least %d", s, userNSBlock, userNSBlock)
	case l < userNSBlock || l%userNSBlock != 0:
		return fmt.Errorf("%q: the length must be a multiple of %d, at least %d", s, userNSBlock, userNSBlock)
	case f+l > 1<<32-userNSBlock:
		return fmt.Errorf("%q: the range must end at or below %d", s, uint64(1<<32-userNSBlock))
	}
	return nil
}
