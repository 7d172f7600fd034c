package llm

import (
	"context"
	"testing"
	"time"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/internal/llmtest"
	"github.com/triage-otel/triage/internal/redisconn"
	"github.com/triage-otel/triage/internal/redistest"
	"github.com/triage-otel/triage/trajectory"
)

// Two collectors sharing one Redis: the error shape the first asked the
// model about is answered from Redis for the second, which never calls.
func TestSharedCacheAcrossConsultants(t *testing.T) {
	addr := redistest.Start(t)
	srv := llmtest.New(t, llmtest.Always(answerJSON(classifier.WrongToolCalled, 0.9, "no handler registered under 'frob'")))
	newShared := func() *RedisCache {
		return NewRedisCache(RedisCacheOptions{Endpoint: addr, KeyPrefix: "t:", Timeout: time.Second, TTL: time.Hour})
	}
	obsA, obsB := &countingObserver{}, &countingObserver{}
	a := newConsultant(t, Options{Endpoint: srv.Endpoint(), Shared: newShared(), Observer: obsA})
	b := newConsultant(t, Options{Endpoint: srv.Endpoint(), Shared: newShared(), Observer: obsB})
	defer a.Close()
	defer b.Close()

	va, consA := review(t, a, rootFailure("s1", "AgentError", "dispatcher has no handler registered under 'frob' (req 41)", 0))
	vb, consB := review(t, b, rootFailure("s2", "AgentError", "dispatcher has no handler registered under 'qux' (req 97)", 0))
	if va.FailureType != classifier.WrongToolCalled || vb.FailureType != classifier.WrongToolCalled {
		t.Fatalf("a %s (%s), b %s (%s %s)", va.FailureType, consA.Detail, vb.FailureType, consB.Outcome, consB.Detail)
	}
	if srv.Calls() != 1 || consB.Source != SourceRedis || obsB.get("hit:redis") != 1 || obsB.get("call:answered") != 0 {
		t.Fatalf("calls %d, b's source %s, observer %v", srv.Calls(), consB.Source, obsB.counts)
	}
	// A third run on b is served from its memory now.
	_, consC := review(t, b, rootFailure("s3", "AgentError", "dispatcher has no handler registered under 'zip' (req 5)", 0))
	if consC.Source != SourceMemory {
		t.Errorf("third source %s", consC.Source)
	}
	// The key carries the model and the signature, with the TTL.
	ttl, err := redisconn.New(redisconn.Options{Endpoint: addr}).PTTL(context.Background(), "t:llm:scripted-model:"+consA.Signature).Result()
	if err != nil || ttl <= 0 || ttl > time.Hour {
		t.Errorf("key TTL %v (%v)", ttl, err)
	}
}

// A Redis that is down costs nothing but a counted error: the model is
// asked.
func TestSharedCacheDown(t *testing.T) {
	srv := llmtest.New(t, llmtest.Always(answerJSON(classifier.Timeout, 0.9, "never answered")))
	obs := &countingObserver{}
	shared := NewRedisCache(RedisCacheOptions{Endpoint: "127.0.0.1:1", Timeout: 50 * time.Millisecond})
	c := newConsultant(t, Options{Endpoint: srv.Endpoint(), Shared: shared, Observer: obs})
	defer c.Close()
	v, cons := review(t, c, rootFailure("s", "AgentError", msgSilent, 0))
	if v.FailureType != classifier.Unknown && cons.Outcome != OutcomeAccepted {
		t.Fatalf("%s %s", v.FailureType, cons.Outcome)
	}
	if srv.Calls() != 1 || obs.get("error:cache") != 2 {
		t.Fatalf("calls %d, observer %v", srv.Calls(), obs.counts)
	}
}

func TestSignatureMasksWhatVaries(t *testing.T) {
	same := [][2]string{
		{"Tool 'frob' failed after 3 tries (request 7f3a91c2-0d3e-4b5a-9c1d-2e3f4a5b6c7d)", "tool 'zap' failed after 12 tries (request 0b77e1d4-1111-2222-3333-444455556666)"},
		{"open /var/data/a.json: permission", "open /tmp/b/c.json: permission"},
		{"GET https://api.example.com/v1/x?id=4 answered nothing", "GET https://other.example/v2/y answered nothing"},
		{"call_8fK2 stalled   at step 4", "call_Zq91 stalled at step 17"},
	}
	for _, p := range same {
		if a, b := sigOf(classifier.SubjectRun, p[0]), sigOf(classifier.SubjectRun, p[1]); a != b {
			t.Errorf("%q and %q: %s != %s (%q, %q)", p[0], p[1], a, b, normalise(p[0]), normalise(p[1]))
		}
	}
	if sigOf(classifier.SubjectRun, "upstream stalled") == sigOf(classifier.SubjectToolCall, "upstream stalled") {
		t.Error("the subject kind is part of the signature")
	}
	if sigOf(classifier.SubjectRun, "upstream stalled") == sigOf(classifier.SubjectRun, "upstream refused") {
		t.Error("different words, same signature")
	}
}

func sigOf(kind classifier.SubjectKind, msg string) string {
	s, _ := Signature(&classifier.Subject{Kind: kind, Errors: []trajectory.ErrorInfo{{Message: msg}}})
	return s
}
