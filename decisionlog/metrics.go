package decisionlog

import "github.com/prometheus/client_golang/prometheus"

// Collectors are the Logger's Prometheus series, to register with the
// registry /metrics serves: toolgate_decision_log_dropped_total and
// toolgate_decision_log_written_total. A nil Logger's read zero.
func (l *Logger) Collectors() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "toolgate_decision_log_dropped_total",
			Help: "Decision-log events dropped: buffer full, logged after close, or unwritten at close.",
		}, func() float64 { return float64(l.Dropped()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "toolgate_decision_log_written_total",
			Help: "Decision-log events the sink accepted.",
		}, func() float64 { return float64(l.Written()) }),
	}
}
