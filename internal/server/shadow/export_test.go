package shadow

import (
	"context"
	"time"
)

// SetPacing replaces the worker's clock and rest (before Run).
func SetPacing(s *Shadow, now func() time.Time, rest func(context.Context, time.Duration)) {
	s.now, s.rest = now, rest
}
