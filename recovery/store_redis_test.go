package recovery

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/triage-otel/triage/internal/redistest"
	"github.com/triage-otel/triage/recovery/internal/breaker"
)

// redisServer is a redis-server started by the test, on a free port, with
// persistence off.
type redisServer struct {
	addr string
	cmd  *exec.Cmd
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startRedis starts redis-server from PATH. Without it the test is skipped,
// unless TRIAGE_REQUIRE_REDIS=1 (CI), where it fails.
func startRedis(t testing.TB) *redisServer {
	t.Helper()
	bin := redistest.Binary(t)
	s := &redisServer{addr: fmt.Sprintf("127.0.0.1:%d", freePort(t))}
	s.start(t, bin)
	return s
}

func (s *redisServer) start(t testing.TB, bin string) {
	t.Helper()
	_, port, _ := net.SplitHostPort(s.addr)
	s.cmd = exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	cmd := s.cmd
	t.Cleanup(func() { s.stopCmd(cmd) })
	c := redis.NewClient(&redis.Options{Addr: s.addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	for range 100 {
		if c.Ping(context.Background()).Err() == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("redis-server on %s did not answer", s.addr)
}

func (s *redisServer) stopCmd(cmd *exec.Cmd) {
	if cmd.ProcessState != nil {
		return
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
}

func (s *redisServer) stop() { s.stopCmd(s.cmd) }

func redisConfig(addr string) string {
	return fmt.Sprintf(`
history:
  reset_on_success: true
  redis: {endpoint: %q, timeout: 500ms, recheck_interval: 1s}
`, addr)
}

func TestTwoCollectorsShareOneSequenceThroughRedis(t *testing.T) {
	srv := startRedis(t)
	cfg := `
policy:
  external_fault:
    kind: sequence
    steps:
      - {kind: backoff_and_retry, max_attempts: 2, base_delay: 1s}
      - {kind: replan, hint: "External service may be down: try a different approach."}
` + redisConfig(srv.addr)
	a, b := newEngine(t, cfg), newEngine(t, cfg)
	want := []step{
		{ActionRetry, 1000, "external_fault.steps[0]:backoff_and_retry"},
		{ActionRetry, 2000, "external_fault.steps[0]:backoff_and_retry"},
		{ActionReplan, 0, "external_fault.steps[1]:replan"},
		{ActionReplan, 0, "external_fault.steps[1]:replan"},
		{ActionReplan, 0, "external_fault.steps[1]:replan"},
		{ActionEscalate, 0, "external_fault:exhausted"},
	}
	in := input("external_fault", "shared-session")
	for i, w := range want {
		e := []*Engine{a, b}[i%2] // the runs of the session land on alternating collectors
		d := decide(t, e, in)
		if d.Action.Kind != w.kind || d.Action.DelayMS != w.delayMS || d.Policy != w.policy || d.Attempt != i+1 {
			t.Fatalf("failure %d on collector %d: %+v %s attempt %d, want %+v", i+1, i%2, d.Action, d.Policy, d.Attempt, w)
		}
	}
	// A success seen by one collector resets the session for both.
	if err := b.RecordSuccess(context.Background(), SuccessInput{SessionID: "shared-session"}); err != nil {
		t.Fatal(err)
	}
	if d := decide(t, a, in); d.Attempt != 1 {
		t.Fatalf("after success on the other collector: attempt %d", d.Attempt)
	}
	// Concurrent failures of one session get distinct attempt numbers.
	var mu sync.Mutex
	seen := map[int]bool{}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := []*Engine{a, b}[i%2].Decide(context.Background(), input("timeout", "busy"))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			seen[d.Attempt] = true
			mu.Unlock()
		}()
	}
	wg.Wait()
	for n := 1; n <= 20; n++ {
		if !seen[n] {
			t.Fatalf("attempt %d missing: %v", n, seen)
		}
	}
	for _, e := range []*Engine{a, b} {
		if s := e.Stats(); s.Degraded != 0 {
			t.Fatalf("no degradation expected: %+v", s)
		}
	}
}

func TestHalfOpenOneProbeAcrossCollectorsThroughRedis(t *testing.T) {
	srv := startRedis(t)
	clock := newFakeClock()
	cfg := `
policy:
  external_fault:
    kind: circuit_breaker
    name: upstream
    failure_threshold: 3
    window: 1m
    cooldown: 30s
    inner: {kind: backoff_and_retry, max_attempts: 100, base_delay: 1s}
` + redisConfig(srv.addr)
	a := newEngine(t, cfg, WithClock(clock))
	b := newEngine(t, cfg, WithClock(clock))
	decide(t, a, input("external_fault", "s1"))
	decide(t, b, input("external_fault", "s2"))
	if d := decide(t, a, input("external_fault", "s3")); d.Breaker.State != string(breaker.Open) {
		t.Fatalf("failures on two collectors open one breaker: %+v", d.Breaker)
	}
	if d := decide(t, b, input("external_fault", "s4")); d.Breaker.State != string(breaker.Open) || d.Action.Kind != ActionEscalate {
		t.Fatalf("the other collector sees it open: %+v", d.Breaker)
	}
	clock.Advance(31 * time.Second)
	probes, denied := countProbes(t, []*Engine{a, b}, 24)
	if probes != 1 || denied != 23 {
		t.Fatalf("probes %d denied %d across two collectors, want 1 and 23", probes, denied)
	}
	if err := b.RecordSuccess(context.Background(), SuccessInput{}); err != nil {
		t.Fatal(err)
	}
	if d := decide(t, a, input("external_fault", "s5")); d.Breaker.State != string(breaker.Closed) || d.Action.Kind != ActionRetry {
		t.Fatalf("closed by a success seen on the other collector: %+v", d.Breaker)
	}
	for _, e := range []*Engine{a, b} {
		if s := e.Stats(); s.Degraded != 0 {
			t.Fatalf("no degradation expected: %+v", s)
		}
	}
}

func TestRedisDownDegradesToMemoryAndCounts(t *testing.T) {
	srv := startRedis(t)
	clock := newFakeClock()
	var mu sync.Mutex
	var degradedOps []string
	e := newEngine(t, `
policy:
  timeout: {kind: backoff_and_retry, max_attempts: 10}
`+redisConfig(srv.addr), WithClock(clock), WithOnDegraded(func(op string, err error) {
		mu.Lock()
		degradedOps = append(degradedOps, op)
		mu.Unlock()
	}))
	in := input("timeout", "s")
	checkWalk(t, e, in, []step{
		{ActionRetry, 1000, "timeout:backoff_and_retry"},
		{ActionRetry, 2000, "timeout:backoff_and_retry"},
	})
	srv.stop()
	// Redis is gone: the decision still comes, from memory, and is counted.
	d := decide(t, e, in)
	if d.Action.Kind != ActionRetry || d.Attempt != 1 {
		t.Fatalf("degraded decision: %+v attempt %d", d.Action, d.Attempt)
	}
	st := e.Stats()
	if st.Degraded != 1 || st.RedisFailures != 1 || !st.RedisDown {
		t.Fatalf("stats %+v", st)
	}
	// While down, Redis is not tried again until the recheck interval.
	decide(t, e, in)
	if st := e.Stats(); st.Degraded != 2 || st.RedisFailures != 1 {
		t.Fatalf("within the recheck interval: %+v", st)
	}
	clock.Advance(2 * time.Second)
	decide(t, e, in)
	if st := e.Stats(); st.Degraded != 3 || st.RedisFailures != 2 {
		t.Fatalf("after the recheck interval Redis is tried (and fails) again: %+v", st)
	}
	mu.Lock()
	if len(degradedOps) != 3 || degradedOps[0] != "attempt" {
		t.Fatalf("callback ops %v", degradedOps)
	}
	mu.Unlock()

	// Redis back on the same port: decisions use it again.
	bin, _ := exec.LookPath("redis-server")
	srv.start(t, bin)
	clock.Advance(2 * time.Second)
	// The new server is empty (no persistence): attempt 1 comes from Redis,
	// where memory would have answered 4.
	if d := decide(t, e, in); d.Attempt != 1 {
		t.Fatalf("back on Redis: attempt %d, want 1 from the fresh server", d.Attempt)
	}
	if st := e.Stats(); st.Degraded != 3 || st.RedisDown {
		t.Fatalf("recovered: %+v", st)
	}
}

func TestRedisThatNeverAnswersIsBoundedByTimeout(t *testing.T) {
	// A listener that accepts and never replies: every call must give up
	// after the timeout and be served from memory.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	}()
	e := newEngine(t, `
history:
  redis: {endpoint: "`+l.Addr().String()+`", timeout: 100ms}
`)
	d := decide(t, e, input("timeout", "s"))
	if d.Action.Kind != ActionRetry {
		t.Fatalf("%+v", d)
	}
	if st := e.Stats(); st.Degraded != 1 || st.RedisFailures != 1 {
		t.Fatalf("stats %+v", st)
	}
}
