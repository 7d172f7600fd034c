package triageconnector // import "github.com/triage-otel/triage/connector/triageconnector"

import (
	"slices"
	"sort"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/triage-otel/triage/wire"
)

// overflowAttr marks an overflow series, as the OpenTelemetry SDKs do.
const overflowAttr = "otel.metric.overflow"

// attrDef is one attribute of a metric. Enumerated attributes take values
// from a fixed list (anything else is already "other"), so they are bounded
// by construction; free attributes (service, agent, tool) are not and are
// what the cardinality limit guards.
type attrDef struct {
	key  string
	free bool
}

type metricKind int

const (
	kindSum metricKind = iota
	kindHistogram
)

type metricDef struct {
	name, description, unit string
	kind                    metricKind
	attrs                   []attrDef
}

// The metrics of the traces to metrics side, in output order.
var (
	metricRuns = metricDef{
		name: wire.MetricRuns, unit: "{run}", kind: kindSum,
		description: "Agent runs classified by the triage processor, by verdict.",
		attrs:       []attrDef{{key: "verdict"}},
	}
	metricFailures = metricDef{
		name: wire.MetricFailures, unit: "{run}", kind: kindSum,
		description: "Failed agent runs, by failure type, service, agent and the tool of the terminal incident.",
		attrs:       []attrDef{{key: "failure_type"}, {key: "service", free: true}, {key: "agent", free: true}, {key: "tool", free: true}},
	}
	metricIncidents = metricDef{
		name: wire.MetricIncidents, unit: "{incident}", kind: kindSum,
		description: "Failing steps (incidents), by failure type and whether the run recovered from them.",
		attrs:       []attrDef{{key: "failure_type"}, {key: "recovered"}},
	}
	metricDecisions = metricDef{
		name: wire.MetricDecisions, unit: "{decision}", kind: kindSum,
		description: "Recovery decisions, by failure type and action kind.",
		attrs:       []attrDef{{key: "failure_type"}, {key: "action"}},
	}
	metricInFlightDecisions = metricDef{
		name: wire.MetricInFlightDecisions, unit: "{decision}", kind: kindSum,
		description: "In-flight decisions (a guard tripped while the run was still going), by guard and action kind.",
		attrs:       []attrDef{{key: "guard"}, {key: "action"}},
	}
	metricRunDuration = metricDef{
		name: wire.MetricRunDuration, unit: "s", kind: kindHistogram,
		description: "Duration of agent runs (root span), by verdict.",
		attrs:       []attrDef{{key: "verdict"}},
	}
)

// series is one attribute set of one metric, cumulative since start.
type series struct {
	values   []string
	overflow bool
	start    pcommon.Timestamp

	count   uint64 // sum value, or histogram count
	sum     float64
	min     float64
	max     float64
	buckets []uint64
}

// metricAgg holds the series of one metric.
type metricAgg struct {
	def    *metricDef
	bounds []float64
	limit  int
	series map[string]*series
	normal int // series that are not overflow series
}

func newMetricAgg(def *metricDef, limit int, bounds []float64) *metricAgg {
	return &metricAgg{def: def, limit: limit, bounds: bounds, series: make(map[string]*series)}
}

// seriesFor returns the series of values, creating it at now. Once the
// metric holds limit series, a new attribute set goes to an overflow series
// where the free attributes read "other" (all attributes when the metric
// has no free one); overflowed reports that. created reports whether a new
// series was made.
func (m *metricAgg) seriesFor(values []string, now pcommon.Timestamp) (s *series, overflowed, created bool) {
	key := strings.Join(values, "\x00")
	if s, ok := m.series[key]; ok {
		return s, s.overflow, false
	}
	if m.normal < m.limit {
		s = m.newSeries(values, false, now)
		m.series[key] = s
		m.normal++
		return s, false, true
	}
	ov := slices.Clone(values)
	hasFree := slices.ContainsFunc(m.def.attrs, func(a attrDef) bool { return a.free })
	for i, a := range m.def.attrs {
		if a.free || !hasFree {
			ov[i] = valueOther
		}
	}
	key = "\x01" + strings.Join(ov, "\x00")
	if s, ok := m.series[key]; ok {
		return s, true, false
	}
	s = m.newSeries(ov, true, now)
	m.series[key] = s
	return s, true, true
}

func (m *metricAgg) newSeries(values []string, overflow bool, now pcommon.Timestamp) *series {
	s := &series{values: values, overflow: overflow, start: now}
	if m.def.kind == kindHistogram {
		s.buckets = make([]uint64, len(m.bounds)+1)
	}
	return s
}

func (m *metricAgg) observe(s *series, v float64) {
	if s.count == 0 || v < s.min {
		s.min = v
	}
	if s.count == 0 || v > s.max {
		s.max = v
	}
	s.count++
	s.sum += v
	// Bucket i counts bounds[i-1] < v <= bounds[i].
	s.buckets[sort.SearchFloat64s(m.bounds, v)]++
}

// appendTo writes the metric's series, in a stable order, as a cumulative
// metric at now. It writes nothing when there is no series.
func (m *metricAgg) appendTo(ms pmetric.MetricSlice, now pcommon.Timestamp) {
	if len(m.series) == 0 {
		return
	}
	keys := make([]string, 0, len(m.series))
	for k := range m.series {
		keys = append(keys, k)
	}
	sort.Strings(keys)

	out := ms.AppendEmpty()
	out.SetName(m.def.name)
	out.SetDescription(m.def.description)
	out.SetUnit(m.def.unit)
	switch m.def.kind {
	case kindSum:
		sum := out.SetEmptySum()
		sum.SetIsMonotonic(true)
		sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		dps := sum.DataPoints()
		dps.EnsureCapacity(len(keys))
		for _, k := range keys {
			s := m.series[k]
			dp := dps.AppendEmpty()
			m.putAttrs(dp.Attributes(), s)
			dp.SetStartTimestamp(s.start)
			dp.SetTimestamp(now)
			dp.SetIntValue(int64(s.count))
		}
	case kindHistogram:
		h := out.SetEmptyHistogram()
		h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		dps := h.DataPoints()
		dps.EnsureCapacity(len(keys))
		for _, k := range keys {
			s := m.series[k]
			dp := dps.AppendEmpty()
			m.putAttrs(dp.Attributes(), s)
			dp.SetStartTimestamp(s.start)
			dp.SetTimestamp(now)
			dp.SetCount(s.count)
			dp.SetSum(s.sum)
			if s.count > 0 {
				dp.SetMin(s.min)
				dp.SetMax(s.max)
			}
			dp.ExplicitBounds().FromRaw(m.bounds)
			dp.BucketCounts().FromRaw(s.buckets)
		}
	}
}

func (m *metricAgg) putAttrs(attrs pcommon.Map, s *series) {
	attrs.EnsureCapacity(len(m.def.attrs) + 1)
	for i, a := range m.def.attrs {
		attrs.PutStr(a.key, s.values[i])
	}
	if s.overflow {
		attrs.PutBool(overflowAttr, true)
	}
}
