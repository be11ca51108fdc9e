package benchdata

import "testing"

// MeasureCPU starts measuring the CPU time of the process (user and
// system, every thread); the function it returns reports it per
// iteration as cpu-ns/op. On a machine other processes share, ns/op also
// counts the wait for a core and moves with their load; the CPU time is
// what the benchmark's own work costs. Call it after the benchmark's set
// up and its returned function once the timed loop is over. Where the
// system does not tell the CPU time, nothing is reported.
func MeasureCPU(b *testing.B) (report func()) {
	start, ok := processCPU()
	return func() {
		if end, ok2 := processCPU(); ok && ok2 && b.N > 0 {
			b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
		}
	}
}
