package recovery

import (
	"strings"
	"testing"
)

func TestConfigErrorsNameTheEntry(t *testing.T) {
	cases := []struct {
		yaml string
		want []string
	}{
		{`
policy:
  external_fault:
    kind: sequence
    steps:
      - {kind: backoff_and_retry, max_attempts: 2}
      - {kind: replann}
`, []string{`policy.external_fault.steps[1]: unknown kind "replann"`}},
		{`
policy:
  externl_fault: {kind: replan}
`, []string{`policy.externl_fault: unknown failure type`}},
		{`
policy:
  timeout: {max_attempts: 2}
`, []string{`policy.timeout: kind is required`}},
		{`
policy:
  timeout: {kind: backoff_and_retry, base_delay: 10s, max_delay: 1s, jitter: 2, multiplier: 0.5}
`, []string{`policy.timeout.max_delay`, `policy.timeout.jitter`, `policy.timeout.multiplier`}},
		{`
policy:
  external_fault: {kind: chain, primary: {kind: backoff_and_retry}}
`, []string{`policy.external_fault.fallback: required`}},
		{`
policy:
  external_fault: {kind: sequence}
`, []string{`policy.external_fault.steps: a sequence needs at least one step`}},
		{`
policy:
  external_fault:
    kind: circuit_breaker
    scope: region
    open_action: retry
    inner: {kind: backoff_and_retry, max_attempts: -1}
`, []string{`policy.external_fault.scope: unknown scope "region"`, `policy.external_fault.open_action: "retry"`}},
		{`
policy:
  external_fault:
    kind: circuit_breaker
    inner: {kind: backoff_and_retry, max_attempts: -1}
`, []string{`policy.external_fault.inner.max_attempts: must not be negative`}},
		{`
policy:
  external_fault: {kind: circuit_breaker, name: upstream, failure_threshold: 5, inner: {kind: backoff_and_retry}}
  timeout: {kind: circuit_breaker, name: upstream, failure_threshold: 3, inner: {kind: backoff_and_retry}}
`, []string{`policy.timeout.name: breaker "upstream" is declared at policy.external_fault with other settings`}},
		{`
history: {ttl: -1s, max_sessions: -3, redis: {timeout: -1ms}}
`, []string{`history.ttl`, `history.max_sessions`, `history.redis.timeout`}},
	}
	for _, c := range cases {
		cfg := decodeConfig(t, c.yaml)
		err := cfg.Validate()
		if err == nil {
			t.Errorf("config %s: no error", c.yaml)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("config %s: error %q lacks %q", c.yaml, err, w)
			}
		}
		if _, nerr := New(cfg); nerr == nil {
			t.Errorf("New accepted an invalid config %s", c.yaml)
		}
	}
}

func TestConfigAcceptsEveryKind(t *testing.T) {
	cfg := decodeConfig(t, `
policy:
  wrong_tool_called: {kind: retry_with_tool_manifest, max_attempts: 3, hint: "use the manifest"}
  schema_mismatch: {kind: rollback_to_checkpoint, checkpoint_id: before-call}
  external_fault:
    kind: chain
    primary:
      kind: circuit_breaker
      name: upstream
      failure_threshold: 3
      window: 1m
      cooldown: 30s
      scope: tool
      open_action: escalate
      inner: {kind: backoff_and_retry, max_attempts: 3, base_delay: 500ms, max_delay: 10s, multiplier: 3, jitter: 0.2}
    fallback: {kind: fallback, target: "model:local-small"}
  timeout: {kind: suspend, reason: "ask the operator"}
  loop_detected: {kind: replan, max_attempts: 2, hint: "change approach"}
  plan_incomplete: {kind: resume_from_subgoal, require_subgoal: true}
  constraint_ignored: {kind: abort, reason: "policy violation"}
  unknown: {kind: escalate}
  default: {kind: sequence, steps: [{kind: replan}, {kind: escalate}]}
history:
  ttl: 2h
  max_sessions: 500
  max_breakers: 50
  breaker_ttl: 12h
  reset_on_success: true
  redis: {endpoint: "localhost:6379", password: "s3cret", key_prefix: "t:", timeout: 50ms, recheck_interval: 2s}
`)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.History.Redis.Password != "s3cret" {
		t.Errorf("password %q", cfg.History.Redis.Password)
	}
	p, err := cfg.buildPolicy()
	if err != nil {
		t.Fatal(err)
	}
	if len(p.breakers) != 1 || p.breakers[0].Name != "upstream" || p.breakers[0].Settings.Threshold != 3 {
		t.Errorf("breakers: %+v", p.breakers)
	}
	if _, s := p.lookup("external_fault"); s.MaxAttempts() != 4 {
		t.Errorf("chain budget %d, want 3+1", s.MaxAttempts())
	}
}

func TestDefaultPolicyIsValid(t *testing.T) {
	var cfg Options
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	p, _ := cfg.buildPolicy()
	for _, k := range policyKeys() {
		if entry, _ := p.lookup(k); entry != k {
			t.Errorf("default policy has no entry for %s", k)
		}
	}
}

func TestDefaultConfig(t *testing.T) {
	cfg := DefaultOptions()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if !cfg.History.ResetOnSuccess || cfg.History.MaxSessions <= 0 || cfg.History.TTL <= 0 || cfg.History.Redis.Endpoint != "" {
		t.Fatalf("%+v", cfg.History)
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.failover != nil {
		t.Fatal("the default config must not use Redis")
	}
}
