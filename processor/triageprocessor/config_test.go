package triageprocessor

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/ottl"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/triage-otel/triage/guard"
	"github.com/triage-otel/triage/processor/triageprocessor/internal/metadata"
)

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)

	tests := []struct {
		id      component.ID
		want    *Config
		wantErr string // substring naming the field
	}{
		{
			id:   component.NewID(metadata.Type),
			want: createDefaultConfig().(*Config),
		},
		{
			id: component.NewIDWithName(metadata.Type, "full"),
			want: &Config{
				DecisionWait:          10 * time.Second,
				RootWait:              2 * time.Second,
				NumTraces:             500,
				MaxSpansPerTrace:      300,
				MaxTraceBytes:         1 << 20,
				MaxBytes:              64 << 20,
				DecisionCacheSize:     2000,
				DecisionCacheBytes:    8 << 20,
				SettleWait:            500 * time.Millisecond,
				LogsWait:              3 * time.Second,
				MaxLogRecordsPerTrace: 400,
				MaxLogBytes:           2 << 20,
				ErrorMode:             ottl.PropagateError,
				Loop:                  LoopConfig{Threshold: 4, Window: 8, Similarity: 0.9},
				Evidence:              EvidenceConfig{AnnotateContent: true},
				Recovery:              defaultRecoveryConfig(),
				LLM:                   defaultLLMConfig(),
				Guards: guard.Config{
					Loop:            guard.LoopConfig{Enabled: true},
					RepeatedFailure: guard.RepeatedFailureConfig{Enabled: false, Threshold: 4},
					Tokens:          guard.TokensConfig{MaxPerRun: 50000, MaxPerSession: 200000},
					Cost: guard.CostConfig{MaxPerSession: 1.5, Prices: map[string]guard.Price{
						"gpt-4o-mini": {InputPerMillion: 0.15, OutputPerMillion: 0.6},
					}},
					WallClock: guard.WallClockConfig{MaxPerRun: 10 * time.Minute},
				},
				Constraints: ConstraintsConfig{
					Global:     []string{"BEGIN PRIVATE KEY"},
					PerService: map[string][]string{"billing-agent": {"card_number"}},
				},
				Rules: []RuleConfig{
					{Name: "db_down", FailureType: "external_fault", Conditions: []string{
						`span.attributes["db.response.status_code"] == "08006"`,
						`IsMatch(span.status.message, "connection refused")`,
					}},
					{Name: "quota", FailureType: "unknown", Conditions: []string{`span.attributes["app.quota.exceeded"] == true`}},
				},
			},
		},
		{id: component.NewIDWithName(metadata.Type, "zero_num_traces"), wantErr: "num_traces"},
		{id: component.NewIDWithName(metadata.Type, "negative_decision_wait"), wantErr: "decision_wait"},
		{id: component.NewIDWithName(metadata.Type, "negative_root_wait"), wantErr: "root_wait"},
		{id: component.NewIDWithName(metadata.Type, "negative_logs_wait"), wantErr: "logs_wait must not be negative"},
		{id: component.NewIDWithName(metadata.Type, "negative_settle_wait"), wantErr: "settle_wait must not be negative"},
		{id: component.NewIDWithName(metadata.Type, "zero_max_log_records"), wantErr: "max_log_records_per_trace"},
		{id: component.NewIDWithName(metadata.Type, "zero_max_log_bytes"), wantErr: "max_log_bytes"},
		{id: component.NewIDWithName(metadata.Type, "zero_max_spans"), wantErr: "max_spans_per_trace"},
		{id: component.NewIDWithName(metadata.Type, "zero_max_trace_bytes"), wantErr: "max_trace_bytes"},
		{id: component.NewIDWithName(metadata.Type, "trace_bytes_over_total"), wantErr: "max_trace_bytes (2048) must not exceed max_bytes (1024)"},
		{id: component.NewIDWithName(metadata.Type, "zero_cache"), wantErr: "decision_cache_size"},
		{id: component.NewIDWithName(metadata.Type, "zero_cache_bytes"), wantErr: "decision_cache_bytes must be greater than 0"},
		{id: component.NewIDWithName(metadata.Type, "unknown_failure_type"), wantErr: `rules[0] ("r1").failure_type "cosmic_rays"`},
		{id: component.NewIDWithName(metadata.Type, "duplicate_rule_names"), wantErr: `rules[1] ("r1").name duplicates rules[0]`},
		{id: component.NewIDWithName(metadata.Type, "empty_rule_name"), wantErr: "rules[0].name must not be empty"},
		{id: component.NewIDWithName(metadata.Type, "no_conditions"), wantErr: `rules[0] ("r1").conditions must not be empty`},
		{id: component.NewIDWithName(metadata.Type, "bad_ottl"), wantErr: `rules[0] ("broken_rule").conditions[0]`},
		{id: component.NewIDWithName(metadata.Type, "no_context_name"), wantErr: `rules[0] ("bare_path").conditions[0]`},
		{id: component.NewIDWithName(metadata.Type, "empty_constraint"), wantErr: "constraints.global[0]"},
		{id: component.NewIDWithName(metadata.Type, "bad_similarity"), wantErr: "loop.similarity"},
		{id: component.NewIDWithName(metadata.Type, "guards_bad_threshold"), wantErr: "guards.repeated_failure.threshold must be between 2 and 1000, got 1"},
		{id: component.NewIDWithName(metadata.Type, "guards_negative_budget"), wantErr: "guards.tokens.max_per_run must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.id.String(), func(t *testing.T) {
			cfg := createDefaultConfig()
			sub, err := cm.Sub(tt.id.String())
			require.NoError(t, err)
			require.NoError(t, sub.Unmarshal(cfg))
			err = confmap.Validate(cfg)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, cfg)
		})
	}
}

func TestBadErrorModeIsRejectedAtUnmarshal(t *testing.T) {
	cm := confmap.NewFromStringMap(map[string]any{"error_mode": "explode"})
	cfg := createDefaultConfig()
	err := cm.Unmarshal(cfg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "error_mode")
}
