package recovery

import (
	"context"
	"fmt"
	"testing"
)

const benchPolicy = `
policy:
  external_fault:
    kind: chain
    primary:
      kind: circuit_breaker
      failure_threshold: 50
      cooldown: 1ns
      inner: {kind: sequence, steps: [{kind: backoff_and_retry, max_attempts: 3}, {kind: replan}]}
    fallback: {kind: fallback}
`

func benchDecide(b *testing.B, e *Engine) {
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		in := input("external_fault", fmt.Sprintf("session-%d", i%1000))
		i++
		if _, err := e.Decide(ctx, in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecideMemory(b *testing.B) {
	benchDecide(b, newEngine(b, benchPolicy))
}

func BenchmarkDecideRedis(b *testing.B) {
	srv := startRedis(b)
	benchDecide(b, newEngine(b, benchPolicy+redisConfig(srv.addr)))
}
