package squeezecaddy

import (
	"bytes"
	"fmt"
	"sync/atomic"

	"github.com/caddyserver/caddy/v2"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/squeezehttp/squeeze"
)

// metricsSets holds, per Caddy metrics registry (one per loaded config),
// the Counters every squeeze handler of that config with metrics on
// reports to, and the collector that exports them there: a registry takes
// one collector of the same metric names. It is Caddy's way of sharing a
// value between the modules of a config (caddy.UsagePool, reference
// counted), the package's one state beyond its pool of calls.
var metricsSets = caddy.NewUsagePool()

// metricsSet is the Counters of one registry and their collector.
type metricsSet struct {
	counters  *squeeze.Counters
	registry  *prometheus.Registry
	collector *countersCollector
}

// Destruct silences the collector when the last handler of its config is
// cleaned up. It stays registered: a registry cannot unregister an
// unchecked collector, whose ID comes from the descriptors it describes.
func (s *metricsSet) Destruct() error {
	s.collector.closed.Store(true)
	return nil
}

// countersFor returns the Counters the handlers of reg's config share,
// registering their collector with reg the first time.
func countersFor(reg *prometheus.Registry) (*squeeze.Counters, error) {
	v, _, err := metricsSets.LoadOrNew(reg, func() (caddy.Destructor, error) {
		s := &metricsSet{counters: new(squeeze.Counters), registry: reg}
		s.collector = &countersCollector{c: s.counters}
		if err := reg.Register(s.collector); err != nil {
			return nil, fmt.Errorf("squeeze: metrics: %w", err)
		}
		return s, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*metricsSet).counters, nil
}

// releaseCounters drops a handler's reference to reg's Counters.
func releaseCounters(reg *prometheus.Registry) error {
	_, err := metricsSets.Delete(reg)
	return err
}

// countersCollector exports a [squeeze.Counters] to a Prometheus registry:
// the metrics of [squeeze.Counters.WritePrometheus], with their names,
// help and labels. It is unchecked (it describes nothing), as the codings
// and reasons it exports appear once counted. Once closed it collects
// nothing.
type countersCollector struct {
	c      *squeeze.Counters
	closed atomic.Bool
}

// Describe describes nothing: the collector is unchecked.
func (*countersCollector) Describe(chan<- *prometheus.Desc) {}

// Collect sends the counters as constant metrics. The text it parses is
// squeeze's own; a metric that does not convert is reported as an invalid
// metric, which fails the scrape with its cause.
func (cc *countersCollector) Collect(ch chan<- prometheus.Metric) {
	if cc.closed.Load() {
		return
	}
	var buf bytes.Buffer
	if err := cc.c.WritePrometheus(&buf); err != nil {
		ch <- prometheus.NewInvalidMetric(prometheus.NewDesc("squeeze_error", "squeeze's counters failed to export.", nil, nil), err)
		return
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(&buf)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(prometheus.NewDesc("squeeze_error", "squeeze's counters failed to parse.", nil, nil), err)
		return
	}
	for name, f := range families {
		vt := prometheus.UntypedValue
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			vt = prometheus.CounterValue
		case dto.MetricType_GAUGE:
			vt = prometheus.GaugeValue
		}
		for _, m := range f.GetMetric() {
			var names, values []string
			for _, l := range m.GetLabel() {
				names = append(names, l.GetName())
				values = append(values, l.GetValue())
			}
			var v float64
			switch vt {
			case prometheus.CounterValue:
				v = m.GetCounter().GetValue()
			case prometheus.GaugeValue:
				v = m.GetGauge().GetValue()
			default:
				v = m.GetUntyped().GetValue()
			}
			desc := prometheus.NewDesc(name, f.GetHelp(), names, nil)
			metric, err := prometheus.NewConstMetric(desc, vt, v, values...)
			if err != nil {
				metric = prometheus.NewInvalidMetric(desc, err)
			}
			ch <- metric
		}
	}
}
