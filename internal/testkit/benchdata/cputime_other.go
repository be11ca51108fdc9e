//go:build !unix

package benchdata

import "time"

func processCPU() (time.Duration, bool) { return 0, false }
