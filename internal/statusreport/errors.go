package statusreport

import "errors"

// ErrRefused: the status URL answered with a status other than 2xx.
var ErrRefused = errors.New("statusreport: refused")
