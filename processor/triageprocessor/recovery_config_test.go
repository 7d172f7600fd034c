package triageprocessor

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/triage-otel/triage/guard"
	"github.com/triage-otel/triage/processor/triageprocessor/internal/metadata"
	"github.com/triage-otel/triage/recovery"
)

func loadRecoveryConfig(t *testing.T, name string) (*Config, error) {
	t.Helper()
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	sub, err := cm.Sub(component.NewIDWithName(metadata.Type, name).String())
	require.NoError(t, err)
	cfg := createDefaultConfig().(*Config)
	if err := sub.Unmarshal(cfg); err != nil {
		return cfg, err
	}
	return cfg, confmap.Validate(cfg)
}

func TestRecoveryConfigDefaults(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	r := cfg.Recovery
	assert.True(t, r.Enabled)
	assert.Equal(t, recovery.DefaultSessionAttributes, r.SessionAttributes)
	assert.Empty(t, r.History.Redis.Endpoint, "memory history by default")
	def := recovery.DefaultOptions()
	def.GuardPolicy = guard.DefaultPolicy()
	assert.Equal(t, def, r.engineOptions(), "the block stands for recovery.DefaultOptions() with the guards' default policy")
	require.NoError(t, cfg.Validate())
}

func TestRecoveryConfigFull(t *testing.T) {
	cfg, err := loadRecoveryConfig(t, "recovery_full")
	require.NoError(t, err)
	r := cfg.Recovery
	assert.True(t, r.Enabled)
	assert.Equal(t, 2*time.Second, r.Timeout)
	assert.Equal(t, []string{"app.session", "gen_ai.conversation.id"}, r.SessionAttributes)
	policy := r.Policy.Entries()
	require.Len(t, policy, 3)
	ext := policy["external_fault"]
	assert.Equal(t, "sequence", ext.Kind)
	spec := ext.spec()
	require.Len(t, spec.Steps, 2)
	assert.Equal(t, recovery.StrategySpec{Kind: "backoff_and_retry", MaxAttempts: 2, BaseDelay: 500 * time.Millisecond}, spec.Steps[0])
	assert.Equal(t, recovery.StrategySpec{Kind: "replan", Hint: "try another approach"}, spec.Steps[1])

	ec := r.engineOptions()
	assert.Equal(t, 30*time.Minute, ec.History.TTL)
	assert.Equal(t, 500, ec.History.MaxSessions)
	assert.Equal(t, 1000, ec.History.MaxBreakers, "unset fields keep recovery's defaults")
	assert.False(t, ec.History.ResetOnSuccess)
	assert.Equal(t, "localhost:6379", ec.History.Redis.Endpoint)
	assert.Equal(t, "s3cr3t-redis-pass", ec.History.Redis.Password)
	assert.Equal(t, 2, ec.History.Redis.DB)
	assert.Equal(t, 200*time.Millisecond, ec.History.Redis.Timeout)
	assert.Equal(t, "triage:", ec.History.Redis.KeyPrefix)
	assert.Equal(t, 256, r.Redaction.MaxLength)
	assert.Equal(t, []string{"send_email", "delete_.*"}, ec.NonIdempotentTools)
	assert.Equal(t, 10, ec.MaxTotalAttempts)
	assert.Equal(t, 15*time.Minute, ec.MaxRecoveryDuration)
	assert.Equal(t, map[string]recovery.StrategySpec{
		"loop":       {Kind: "replan", Hint: "stop repeating the same call"},
		"tokens":     {Kind: "suspend"},
		"cost":       {Kind: "abort"},
		"wall_clock": {Kind: "abort"},
	}, ec.GuardPolicy, "entries replace the guards' defaults, the others stay")

	// The password never prints.
	assert.NotContains(t, r.History.Redis.Password.String(), "s3cr3t")
	assert.Equal(t, "[REDACTED]", fmt.Sprint(r.History.Redis.Password))
	out := confmap.New()
	require.NoError(t, out.Marshal(cfg))
	assert.NotContains(t, strings.Join(flatten(out.ToStringMap()), " "), "s3cr3t-redis-pass")
	// The policy survives a marshal round trip.
	back := createDefaultConfig().(*Config)
	require.NoError(t, out.Unmarshal(back))
	assert.Equal(t, policy, back.Recovery.Policy.Entries())
}

func flatten(m map[string]any) []string {
	var out []string
	for k, v := range m {
		if x, ok := v.(map[string]any); ok {
			out = append(out, flatten(x)...)
			continue
		}
		out = append(out, fmt.Sprintf("%s=%v", k, v))
	}
	return out
}

func TestRecoveryConfigDisabled(t *testing.T) {
	cfg, err := loadRecoveryConfig(t, "recovery_disabled")
	require.NoError(t, err)
	assert.False(t, cfg.Recovery.Enabled)
}

func TestRecoveryConfigErrorsNameTheField(t *testing.T) {
	for name, want := range map[string]string{
		"recovery_bad_step":                `recovery.policy.external_fault.steps[1]: unknown kind "replann"`,
		"recovery_unknown_failure_type":    "recovery.policy.externl_fault: unknown failure type",
		"recovery_field_not_used":          `recovery.policy.timeout.target: not used by kind "replan"`,
		"recovery_bad_endpoint":            `recovery.history.redis.endpoint "no-port-here"`,
		"recovery_timeout_below_redis":     "recovery.timeout (50ms) must be greater than recovery.history.redis.timeout (100ms)",
		"recovery_negative_ttl":            "recovery.history.ttl: must not be negative",
		"recovery_bad_pattern":             "recovery.redaction.extra_patterns",
		"recovery_empty_session_attribute": "recovery.session_attributes[1] must not be empty",
		"recovery_unknown_strategy_field":  "max_atempts",
		"recovery_unknown_guard":           "recovery.guard_policy.lop: unknown guard (want one of loop, repeated_failure, tokens, cost, wall_clock)",
		"recovery_guard_policy_bad_kind":   `recovery.guard_policy.loop: unknown kind "replann"`,
		"recovery_non_idempotent_retries":  `recovery.policy.non_idempotent: kind "backoff_and_retry" retries`,
		"recovery_bad_tool_pattern":        `recovery.non_idempotent_tools[0] "send_(email"`,
		"recovery_negative_caps":           "recovery.max_total_attempts: must not be negative",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := loadRecoveryConfig(t, name)
			require.Error(t, err)
			assert.Contains(t, err.Error(), want)
		})
	}
}

func TestRecoveryConfigSeveralErrorsEachPrefixed(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.Recovery.Policy = mustPolicy(map[string]any{
		"timeout":       map[string]any{"kind": "nope"},
		"loop_detected": map[string]any{"kind": "replan", "target": "x"},
	})
	err := cfg.Validate()
	require.Error(t, err)
	lines := strings.Split(err.Error(), "\n")
	require.Len(t, lines, 2, err.Error())
	for _, l := range lines {
		assert.True(t, strings.HasPrefix(l, "recovery.policy."), l)
	}
}
