package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// Metric names as the collector exposes them to Prometheus.
//
// The triage connector's metrics (triage.runs, triage.failures, …) go
// through the contrib prometheus exporter, which turns dots into underscores,
// adds _total to monotonic sums and the unit suffix (_seconds) to the
// duration histogram. The otelcol_* series are the collector's own telemetry
// (service::telemetry::metrics, port 8888 by default), which the collector
// exposes without _total or unit suffixes.
const (
	metricRuns        = "triage_runs_total"                  // {verdict}
	metricFailures    = "triage_failures_total"              // {failure_type, service, agent, tool}
	metricIncidents   = "triage_incidents_total"             // {failure_type, recovered}
	metricDecisions   = "triage_decisions_total"             // {failure_type, action}
	metricRunDuration = "triage_run_duration_seconds_bucket" // {verdict, le}
	metricInFlight    = "triage_in_flight_decisions_total"   // {guard, action}

	// exporterhelper's telemetry, labelled with the exporter's component ID.
	metricSentLogs       = "otelcol_exporter_sent_log_records"
	metricSendFailedLogs = "otelcol_exporter_send_failed_log_records"
	metricQueueSize      = "otelcol_exporter_queue_size"
	metricQueueCapacity  = "otelcol_exporter_queue_capacity"

	// The recovery_webhook exporter's own telemetry (its metadata.yaml).
	metricWebhookDelivered = "otelcol_recovery_webhook_decisions_delivered"
	metricWebhookFailures  = "otelcol_recovery_webhook_delivery_failures" // {reason}
	metricWebhookDropped   = "otelcol_recovery_webhook_decisions_dropped" // {reason}

	// The triage processor's own telemetry (its metadata.yaml).
	metricTracesDecided      = "otelcol_processor_triage_traces_decided" // {trigger}
	metricRunsDecided        = "otelcol_processor_triage_decisions"      // {verdict, failure_type}
	metricRunsWithoutContent = "otelcol_processor_triage_runs_without_content"
)

// Label selectors built from the template variables. Only triage.failures
// carries service and agent; failure_type is on failures, incidents and
// decisions.
const (
	failureSel     = `service=~"$service", agent=~"$agent", failure_type=~"$failure_type"`
	serviceAgent   = `service=~"$service", agent=~"$agent"`
	failureTypeSel = `failure_type=~"$failure_type"`
	webhookSel     = `exporter=~"recovery_webhook.*"`
)

const (
	dashboardUID   = "triage-agent-failures"
	datasourceVar  = "datasource"
	rateInterval   = "$__rate_interval"
	wholeRange     = "$__range"
	runsPerSecond  = "suffix: runs/s"
	perSecondShort = "suffix: /s"
)

func datasourceRef() common.DataSourceRef {
	return common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${" + datasourceVar + "}")}
}

// dashboardJSON returns the dashboard as indented JSON with a final newline,
// exactly what is checked in.
func dashboardJSON() ([]byte, error) {
	d, err := buildDashboard()
	if err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, err
	}
	// The SDK's marshalers HTML-escape <, > and &; inside JSON strings the
	// plain characters mean the same and keep the PromQL readable.
	b = htmlUnescaper.Replace(b)
	return append(b, '\n'), nil
}

var htmlUnescaper = byteReplacer{`\u003c`: "<", `\u003e`: ">", `\u0026`: "&"}

type byteReplacer map[string]string

func (r byteReplacer) Replace(b []byte) []byte {
	for from, to := range r {
		b = bytes.ReplaceAll(b, []byte(from), []byte(to))
	}
	return b
}

func buildDashboard() (dashboard.Dashboard, error) {
	ids := &panelIDs{}
	b := dashboard.NewDashboardBuilder("Agent failures (triage)").
		Uid(dashboardUID).
		Description("Why AI-agent runs fail, what recovery the triage collector decided, and whether the decisions reach the agent runtime. Data: the triage connector's metrics and the collector's own telemetry, scraped by Prometheus.").
		Tags([]string{"triage", "agents", "opentelemetry"}).
		Editable().
		Refresh("30s").
		Time("now-6h", "now").
		Timezone(common.TimeZoneBrowser).
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		WithVariable(dashboard.NewDatasourceVariableBuilder(datasourceVar).
			Label("Data source").
			Type("prometheus")).
		WithVariable(labelVariable("service", "Service", "label_values("+metricFailures+", service)")).
		WithVariable(labelVariable("agent", "Agent", `label_values(`+metricFailures+`{service=~"$service"}, agent)`)).
		WithVariable(labelVariable("failure_type", "Failure type", "label_values("+metricFailures+", failure_type)"))

	b = overviewRow(b, ids)
	b = failuresRow(b, ids)
	b = whereRow(b, ids)
	b = recoveryRow(b, ids)
	b = inFlightRow(b, ids)
	b = durationRow(b, ids)
	b = deliveryRow(b, ids)
	return b.Build()
}

// overviewRow adds the "overview" row.
func overviewRow(b *dashboard.DashboardBuilder, ids *panelIDs) *dashboard.DashboardBuilder {
	return b.WithRow(row(ids, "Overview")).
		WithPanel(statPanel(ids, "Failed-run share",
			"Share of agent runs whose verdict is failed over the selected time range (runs carry no service or agent label: all runs).",
			"percentunit",
			fmt.Sprintf(`sum(increase(%s{verdict="failed"}[%s])) / sum(increase(%s[%s]))`, metricRuns, wholeRange, metricRuns, wholeRange),
		).Thresholds(thresholds(0.05, 0.2))).
		WithPanel(statPanel(ids, "Failed runs per second",
			"Rate of failed runs over the last rate interval.",
			runsPerSecond,
			fmt.Sprintf(`sum(rate(%s{verdict="failed"}[%s]))`, metricRuns, rateInterval),
		)).
		WithPanel(statPanel(ids, "Classifier coverage: unknown share",
			"Share of failed runs the classifier could not attribute to a failure type (failure_type=unknown) over the selected range, for the selected services and agents. High values mean the rules miss this traffic and the policy falls back to its default action.",
			"percentunit",
			fmt.Sprintf(`(sum(increase(%s{failure_type="unknown", %s}[%s])) or vector(0)) / sum(increase(%s{%s}[%s]))`,
				metricFailures, serviceAgent, wholeRange, metricFailures, serviceAgent, wholeRange),
		).Thresholds(thresholds(0.1, 0.3))).
		WithPanel(statPanel(ids, "Incidents recovered",
			"Share of incidents (failing steps) that the run itself recovered from, over the selected range.",
			"percentunit",
			fmt.Sprintf(`(sum(increase(%s{recovered="true", %s}[%s])) or vector(0)) / sum(increase(%s{%s}[%s]))`,
				metricIncidents, failureTypeSel, wholeRange, metricIncidents, failureTypeSel, wholeRange),
		))
}

// failuresRow adds the "failures over time" row.
func failuresRow(b *dashboard.DashboardBuilder, ids *panelIDs) *dashboard.DashboardBuilder {
	return b.WithRow(row(ids, "Failures over time")).
		WithPanel(timeseriesPanel(ids, "Runs by verdict",
			"Agent runs per second by verdict: ok, recovered (incidents, all recovered) or failed.",
			runsPerSecond, false,
			target(fmt.Sprintf(`sum by (verdict) (rate(%s[%s]))`, metricRuns, rateInterval), "{{verdict}}"),
		)).
		WithPanel(timeseriesPanel(ids, "Failed-run share over time",
			"Failed runs as a share of all runs.",
			"percentunit", false,
			target(fmt.Sprintf(`sum(rate(%s{verdict="failed"}[%s])) / sum(rate(%s[%s]))`, metricRuns, rateInterval, metricRuns, rateInterval), "failed share"),
		).Min(0).Max(1)).
		WithPanel(timeseriesPanel(ids, "Failed runs by failure type",
			"Failed runs per second, by the class of the terminal unrecovered incident (or loop_detected).",
			runsPerSecond, true,
			target(fmt.Sprintf(`sum by (failure_type) (rate(%s{%s}[%s]))`, metricFailures, failureSel, rateInterval), "{{failure_type}}"),
		)).
		WithPanel(timeseriesPanel(ids, "Failure type share",
			"Each failure type's share of the failed runs of the selected services and agents: a type whose share jumps points at a new regression (a tool's schema changed, a provider is down).",
			"percentunit", true,
			target(fmt.Sprintf(`sum by (failure_type) (rate(%s{%s}[%s])) / on() group_left() sum(rate(%s{%s}[%s]))`,
				metricFailures, failureSel, rateInterval, metricFailures, serviceAgent, rateInterval), "{{failure_type}}"),
		).Min(0).Max(1))
}

// whereRow adds the "where" row.
func whereRow(b *dashboard.DashboardBuilder, ids *panelIDs) *dashboard.DashboardBuilder {
	return b.WithRow(row(ids, "Where runs fail")).
		WithPanel(tablePanel(ids, "Top agents by failed runs",
			"The 10 service/agent pairs with the most failed runs over the selected range.",
			"failed runs",
			fmt.Sprintf(`topk(10, sum by (service, agent) (increase(%s{%s}[%s])))`, metricFailures, failureSel, wholeRange),
		)).
		WithPanel(tablePanel(ids, "Top tools by failed runs",
			"The 10 tools most often involved in a failed run's terminal incident over the selected range (runs failing without a tool call are left out).",
			"failed runs",
			fmt.Sprintf(`topk(10, sum by (tool) (increase(%s{%s, tool!=""}[%s])))`, metricFailures, failureSel, wholeRange),
		)).
		WithPanel(tablePanel(ids, "Failure types by agent",
			"Failed runs per service, agent and failure type over the selected range (agent is empty where the spans name none).",
			"failed runs",
			fmt.Sprintf(`sum by (service, agent, failure_type) (increase(%s{%s}[%s])) > 0`, metricFailures, failureSel, wholeRange),
		))
}

// recoveryRow adds the "recovery" row.
func recoveryRow(b *dashboard.DashboardBuilder, ids *panelIDs) *dashboard.DashboardBuilder {
	return b.WithRow(row(ids, "Recovery")).
		WithPanel(timeseriesPanel(ids, "Recovery actions decided",
			"Recovery decisions per second by action kind (retry_with_tool_manifest, backoff_and_retry, replan, escalate, …), for the selected failure types.",
			perSecondShort, true,
			target(fmt.Sprintf(`sum by (action) (rate(%s{%s}[%s]))`, metricDecisions, failureTypeSel, rateInterval), "{{action}}"),
		)).
		WithPanel(tablePanel(ids, "Actions by failure type",
			"Which action the policy chose for which failure type over the selected range.",
			"decisions",
			fmt.Sprintf(`sum by (failure_type, action) (increase(%s{%s}[%s])) > 0`, metricDecisions, failureTypeSel, wholeRange),
		)).
		WithPanel(timeseriesPanel(ids, "Recovered vs unrecovered incidents",
			"Incidents (failing steps) per second, split by whether the run later recovered from them.",
			perSecondShort, true,
			target(fmt.Sprintf(`sum by (recovered) (rate(%s{%s}[%s]))`, metricIncidents, failureTypeSel, rateInterval), "recovered={{recovered}}"),
		))
}

// inFlightRow adds the "while runs are going" row.
func inFlightRow(b *dashboard.DashboardBuilder, ids *panelIDs) *dashboard.DashboardBuilder {
	return b.WithRow(row(ids, "In-flight decisions and blind classification")).
		WithPanel(timeseriesPanel(ids, "In-flight decisions by guard",
			"Decisions sent while the run was still going, because a guard tripped before its root span ended (loop, repeated tool failure, token, cost or wall-clock budget), per second, by guard and action.",
			perSecondShort, true,
			target(fmt.Sprintf(`sum by (guard, action) (rate(%s[%s]))`, metricInFlight, rateInterval), "{{guard}}: {{action}}"),
		).Span(16)).
		WithPanel(statPanel(ids, "Classified without message content",
			"Share of the runs the triage processor classified whose spans recorded no message content (no model messages, tool arguments or results: most instrumentations' default), over the selected range. Those are classified from span structure, status and error codes only, so more of them end up unknown.",
			"percentunit",
			fmt.Sprintf(`(sum(increase(%s[%s])) or vector(0)) / sum(increase(%s[%s]))`, metricRunsWithoutContent, wholeRange, metricRunsDecided, wholeRange),
		).Span(8).Height(8))
}

// durationRow adds the "duration" row.
func durationRow(b *dashboard.DashboardBuilder, ids *panelIDs) *dashboard.DashboardBuilder {
	return b.WithRow(row(ids, "Run duration")).
		WithPanel(timeseriesPanel(ids, "Run duration percentiles by verdict",
			"p50, p90 and p99 of agent-run duration (root span), by verdict: failed runs that take much longer than ok ones usually loop or wait on timeouts.",
			"s", false,
			target(quantile(0.5), "p50 {{verdict}}"),
			target(quantile(0.9), "p90 {{verdict}}"),
			target(quantile(0.99), "p99 {{verdict}}"),
		).Span(24))
}

// deliveryRow adds the "delivery and pipeline health" row.
func deliveryRow(b *dashboard.DashboardBuilder, ids *panelIDs) *dashboard.DashboardBuilder {
	return b.WithRow(row(ids, "Decision delivery and pipeline health")).
		WithPanel(timeseriesPanel(ids, "Decision delivery: sent / failed",
			"Decision log records the recovery_webhook exporter sent, and those it gave up on (permanent errors or retries exhausted), per second (exporterhelper telemetry).",
			perSecondShort, false,
			target(fmt.Sprintf(`sum by (exporter) (rate(%s{%s}[%s]))`, metricSentLogs, webhookSel, rateInterval), "sent {{exporter}}"),
			target(fmt.Sprintf(`sum by (exporter) (rate(%s{%s}[%s]))`, metricSendFailedLogs, webhookSel, rateInterval), "failed {{exporter}}"),
		)).
		WithPanel(timeseriesPanel(ids, "Decision delivery: queue",
			"Decisions waiting in the webhook exporter's sending queue, against its capacity: a queue that grows means the receiver is down or too slow.",
			"short", false,
			target(fmt.Sprintf(`sum by (exporter) (%s{%s})`, metricQueueSize, webhookSel), "queued {{exporter}}"),
			target(fmt.Sprintf(`sum by (exporter) (%s{%s})`, metricQueueCapacity, webhookSel), "capacity {{exporter}}"),
		).Min(0)).
		WithPanel(timeseriesPanel(ids, "Webhook responses",
			"The webhook exporter's own view: decisions accepted (2xx), transient failures left to retry (5xx, 408, 429, timeouts) and decisions dropped (4xx, invalid), per second.",
			perSecondShort, false,
			target(fmt.Sprintf(`sum(rate(%s[%s]))`, metricWebhookDelivered, rateInterval), "delivered"),
			target(fmt.Sprintf(`sum by (reason) (rate(%s[%s]))`, metricWebhookFailures, rateInterval), "retrying: {{reason}}"),
			target(fmt.Sprintf(`sum by (reason) (rate(%s[%s]))`, metricWebhookDropped, rateInterval), "dropped: {{reason}}"),
		)).
		WithPanel(timeseriesPanel(ids, "Triage processor: traces decided",
			"Traces the triage processor decided per second, by trigger: root (run complete), decision_wait (root never arrived), evicted (buffer full: raise num_traces or max_bytes), limit, shutdown.",
			perSecondShort, true,
			target(fmt.Sprintf(`sum by (trigger) (rate(%s[%s]))`, metricTracesDecided, rateInterval), "{{trigger}}"),
		))
}

func row(ids *panelIDs, title string) *dashboard.RowBuilder {
	return dashboard.NewRowBuilder(title).Id(ids.id())
}

// panelIDs hands out stable panel IDs in definition order.
type panelIDs struct{ next uint32 }

func (p *panelIDs) id() uint32 { p.next++; return p.next }

// labelVariable is a multi-value query variable over one label, "All" by
// default, matching every value (also series without the label) when All is
// selected.
func labelVariable(name, label, query string) *dashboard.QueryVariableBuilder {
	return dashboard.NewQueryVariableBuilder(name).
		Label(label).
		Datasource(datasourceRef()).
		Query(dashboard.StringOrMap{String: cog.ToPtr(query)}).
		Definition(query).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Sort(dashboard.VariableSortAlphabeticalAsc).
		Multi(true).
		IncludeAll(true).
		AllValue(".*").
		Current(dashboard.VariableOption{
			Selected: cog.ToPtr(true),
			Text:     dashboard.StringOrArrayOfString{String: cog.ToPtr("All")},
			Value:    dashboard.StringOrArrayOfString{String: cog.ToPtr("$__all")},
		})
}

func target(expr, legend string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().
		Datasource(datasourceRef()).
		Expr(expr).
		LegendFormat(legend).
		Range()
}

func quantile(q float64) string {
	return fmt.Sprintf(`histogram_quantile(%g, sum by (le, verdict) (rate(%s[%s])))`, q, metricRunDuration, rateInterval)
}

func refIDs(targets []*prometheus.DataqueryBuilder) []cog.Builder[variants.Dataquery] {
	out := make([]cog.Builder[variants.Dataquery], len(targets))
	for i, t := range targets {
		out[i] = t.RefId(string(rune('A' + i)))
	}
	return out
}

func timeseriesPanel(ids *panelIDs, title, description, unit string, stacked bool, targets ...*prometheus.DataqueryBuilder) *timeseries.PanelBuilder {
	p := timeseries.NewPanelBuilder().
		Id(ids.id()).
		Title(title).
		Description(description).
		Datasource(datasourceRef()).
		Targets(refIDs(targets)).
		Unit(unit).
		Min(0).
		Height(8).
		Span(12).
		FillOpacity(10).
		Legend(common.NewVizLegendOptionsBuilder().
			DisplayMode(common.LegendDisplayModeTable).
			Placement(common.LegendPlacementRight).
			ShowLegend(true).
			Calcs([]string{"mean", "max", "lastNotNull"})).
		Tooltip(common.NewVizTooltipOptionsBuilder().
			Mode(common.TooltipDisplayModeMulti).
			Sort(common.SortOrderDescending))
	if stacked {
		p = p.Stacking(common.NewStackingConfigBuilder().Mode(common.StackingModeNormal))
	}
	return p
}

func statPanel(ids *panelIDs, title, description, unit, expr string) *stat.PanelBuilder {
	return stat.NewPanelBuilder().
		Id(ids.id()).
		Title(title).
		Description(description).
		Datasource(datasourceRef()).
		Targets(refIDs([]*prometheus.DataqueryBuilder{
			prometheus.NewDataqueryBuilder().Datasource(datasourceRef()).Expr(expr).LegendFormat(strings.ToLower(title)).Instant(),
		})).
		Unit(unit).
		Decimals(2).
		Height(5).
		Span(6).
		GraphMode(common.BigValueGraphModeNone).
		ColorMode(common.BigValueColorModeValue).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"}))
}

func tablePanel(ids *panelIDs, title, description, valueName, expr string) *table.PanelBuilder {
	return table.NewPanelBuilder().
		Id(ids.id()).
		Title(title).
		Description(description).
		Datasource(datasourceRef()).
		Targets(refIDs([]*prometheus.DataqueryBuilder{
			prometheus.NewDataqueryBuilder().Datasource(datasourceRef()).Expr(expr).Format(prometheus.PromQueryFormatTable).Instant(),
		})).
		Unit("short").
		Decimals(0).
		Height(8).
		Span(8).
		// An instant query as a table has a Time column and the value in
		// "Value": hide the first, name the second.
		WithTransformation(dashboard.DataTransformerConfig{
			Id: "organize",
			Options: map[string]any{
				"excludeByName": map[string]bool{"Time": true},
				"renameByName":  map[string]string{"Value": valueName},
			},
		}).
		SortBy([]cog.Builder[common.TableSortByFieldState]{
			common.NewTableSortByFieldStateBuilder().DisplayName(valueName).Desc(true),
		})
}

// thresholds colours a ratio green below warn, orange from warn, red from crit.
func thresholds(warn, crit float64) *dashboard.ThresholdsConfigBuilder {
	return dashboard.NewThresholdsConfigBuilder().
		Mode(dashboard.ThresholdsModeAbsolute).
		Steps([]dashboard.Threshold{
			{Value: nil, Color: "green"},
			{Value: cog.ToPtr(warn), Color: "orange"},
			{Value: cog.ToPtr(crit), Color: "red"},
		})
}
