package triageconnector // import "github.com/triage-otel/triage/connector/triageconnector"

import (
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// seenRuns remembers recently seen runs so that a run carried by several
// spans is emitted and counted once. The processor annotates every top span
// of a run whose root never arrived (triage.root_missing), and a root that
// arrives late gets the same annotations again, decision included.
type seenRuns struct {
	mu  sync.Mutex
	lru *simplelru.LRU[string, struct{}]
}

func newSeenRuns(size int) (*seenRuns, error) {
	lru, err := simplelru.NewLRU[string, struct{}](size, nil)
	if err != nil {
		return nil, err
	}
	return &seenRuns{lru: lru}, nil
}

// add records key and reports whether it was new.
func (s *seenRuns) add(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lru.Contains(key) {
		return false
	}
	s.lru.Add(key, struct{}{})
	return true
}

// forget removes keys, so that a batch the next consumer refused can be
// retried by the caller without being taken for a duplicate.
func (s *seenRuns) forget(keys []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys {
		s.lru.Remove(k)
	}
}

// runKey identifies a run across the spans that carry it: its decision id
// when it has one, else, for stand-ins of a missing root, the trace and
// outcome. A run whose root span is present and that has no decision
// needs no key ("").
func runKey(traceID pcommon.TraceID, run runRoot) string {
	if run.decision != nil && run.decision.ID != "" {
		return decisionKey(run.decision.ID)
	}
	if run.rootMissing {
		return "m:" + traceID.String() + ":" + run.verdict + ":" + run.failureType
	}
	return ""
}

func decisionKey(id string) string { return "d:" + id }
