package prober

import "os"

func unixGetpid() int { return os.Getpid() }
