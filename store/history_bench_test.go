package store

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testkit/benchdata"
)

// BenchmarkReadHistory reads a caller's 100 entries (the whole window) from
// the memory and the SQLite store, as a call whose policy reads
// input.history does.
func BenchmarkReadHistory(b *testing.B) {
	for _, kind := range []string{"memory", "sqlite"} {
		b.Run("store="+kind, func(b *testing.B) {
			var hs HistoryStore = NewMemoryStore()
			if kind == "sqlite" {
				s, err := OpenSQLite(filepath.Join(b.TempDir(), "ledger.db"))
				require.NoError(b, err)
				b.Cleanup(func() { _ = s.Close() })
				hs = s
			}
			ctx := context.Background()
			k := HistoryKey{Source: "tokens", Subject: "bench"}
			for i := range 100 {
				e := HistoryEntry{Tool: "pay", At: t0.Add(time.Duration(i) * time.Second), Outcome: "result", Arguments: []byte(`{"text":"x"}`)}
				require.NoError(b, hs.AppendHistory(ctx, k, e, time.Hour, 100))
			}
			b.ReportAllocs()
			cpu := benchdata.MeasureCPU(b)
			for b.Loop() {
				es, err := hs.ReadHistory(ctx, k, t0.Add(-time.Minute), 100)
				if err != nil || len(es) != 100 {
					b.Fatalf("%d entries, %v", len(es), err)
				}
			}
			cpu()
		})
	}
}
