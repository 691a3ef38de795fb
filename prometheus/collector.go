// Package squeezeprometheus exports a [squeeze.Counters] to a Prometheus
// registry of client_golang, as a [prometheus.Collector]. It is a module
// of its own so that squeeze itself does not depend on client_golang:
// [squeeze.Counters.WritePrometheus] serves the same metrics without it.
package squeezeprometheus

import (
	"bytes"
	"errors"
	"fmt"
	"sort"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/squeezehttp/squeeze"
)

// Collector is a [prometheus.Collector] of the metrics of a
// [squeeze.Counters]: the families, names, help, labels (coding, reason)
// and values [squeeze.Counters.WritePrometheus] writes, so a dashboard
// built on one reads the other. Counters are counters and
// squeeze_shared_store_breaker_open is a gauge.
//
// The families are those WritePrometheus writes at each collection, and a
// family's labels appear with its first sample (a coding once it has been
// counted): Describe sends no descriptor, which makes Collector an
// unchecked collector, as [prometheus.Collector] allows. Register one
// Collector per Counters.
type Collector struct {
	counters *squeeze.Counters
}

// NewCollector returns the Collector of c's metrics. c must not be nil.
func NewCollector(c *squeeze.Counters) (*Collector, error) {
	if c == nil {
		return nil, errors.New("squeezeprometheus: NewCollector: the Counters is nil")
	}
	return &Collector{counters: c}, nil
}

// MustNewCollector is [NewCollector] that panics on error.
func MustNewCollector(c *squeeze.Counters) *Collector {
	col, err := NewCollector(c)
	if err != nil {
		panic(err)
	}
	return col
}

// Describe sends nothing: Collector is unchecked (see [Collector]).
func (*Collector) Describe(chan<- *prometheus.Desc) {}

// errorDesc describes the invalid metric Collect sends if the counters
// cannot be read.
var errorDesc = prometheus.NewDesc("squeeze_collector_error", "The squeeze counters could not be read.", nil, nil)

// Collect sends the counters' current values. Each is read atomically; they
// are not read all at one instant.
func (col *Collector) Collect(ch chan<- prometheus.Metric) {
	families, err := col.families()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(errorDesc, err)
		return
	}
	for _, f := range families {
		if len(f.GetMetric()) == 0 {
			continue
		}
		var labels []string
		for _, l := range f.GetMetric()[0].GetLabel() {
			labels = append(labels, l.GetName())
		}
		desc := prometheus.NewDesc(f.GetName(), f.GetHelp(), labels, nil)
		for _, m := range f.GetMetric() {
			values := make([]string, 0, len(labels))
			for _, l := range m.GetLabel() {
				values = append(values, l.GetValue())
			}
			var metric prometheus.Metric
			var err error
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				metric, err = prometheus.NewConstMetric(desc, prometheus.CounterValue, m.GetCounter().GetValue(), values...)
			case dto.MetricType_GAUGE:
				metric, err = prometheus.NewConstMetric(desc, prometheus.GaugeValue, m.GetGauge().GetValue(), values...)
			default:
				err = fmt.Errorf("squeezeprometheus: %s is a %s; only counters and gauges are read", f.GetName(), f.GetType())
			}
			if err != nil {
				metric = prometheus.NewInvalidMetric(desc, err)
			}
			ch <- metric
		}
	}
}

// families reads the counters as WritePrometheus writes them, sorted by
// name.
func (col *Collector) families() ([]*dto.MetricFamily, error) {
	var b bytes.Buffer
	if err := col.counters.WritePrometheus(&b); err != nil {
		return nil, fmt.Errorf("squeezeprometheus: writing the counters: %w", err)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	byName, err := parser.TextToMetricFamilies(&b)
	if err != nil {
		return nil, fmt.Errorf("squeezeprometheus: reading the counters: %w", err)
	}
	families := make([]*dto.MetricFamily, 0, len(byName))
	for _, f := range byName {
		families = append(families, f)
	}
	sort.Slice(families, func(i, j int) bool { return families[i].GetName() < families[j].GetName() })
	return families, nil
}
