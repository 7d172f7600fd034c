package triageprocessor // import "github.com/triage-otel/triage/processor/triageprocessor"

import "sync"

// The shared-component pattern of contrib's internal/sharedcomponent, for a
// processor: the collector creates one instance of `triage` per pipeline it
// appears in, all with the same *Config. The traces instance and the logs
// instances of one component share one triageProcessor, so log events join
// the traces it holds. Unlike sharedcomponent, which stops the shared
// component at the first Shutdown, the state here is counted: the traces
// instance decides and forwards what it holds at its own Shutdown (its
// exporters are still running then), and the state's resources (recovery
// history, telemetry) are released when the last instance shuts down.
//
// Keyed by the *Config, as contrib's receivers are: a collector reload
// builds new configs and so new states. A component in two traces pipelines
// gets one state per traces pipeline (each forwards to its own exporters);
// the logs instances join the first.

// states holds the states of the components built in this process.
var states = &sharedStates{m: make(map[*Config]*sharedState)}

type sharedStates struct {
	mu sync.Mutex
	m  map[*Config]*sharedState
}

type sharedState struct {
	p      *triageProcessor
	refs   int
	traces bool // a traces instance holds the state
}

// acquire returns the state of cfg, creating it on first use, and the
// release function of this instance: it reports whether that was the last
// instance of the state (and forgets the state then). Calling it again is a
// no-op reporting false.
func (s *sharedStates) acquire(cfg *Config, traces bool, create func() (*triageProcessor, error)) (*triageProcessor, func() bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.m[cfg]
	if ok && traces && st.traces {
		// A second traces pipeline: its own state, not shared.
		p, err := create()
		if err != nil {
			return nil, nil, err
		}
		return p, onceTrue(), nil
	}
	if !ok {
		p, err := create()
		if err != nil {
			return nil, nil, err
		}
		st = &sharedState{p: p}
		s.m[cfg] = st
	}
	st.refs++
	st.traces = st.traces || traces
	var once sync.Once
	return st.p, func() bool {
		last := false
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			st.refs--
			if st.refs == 0 {
				last = true
				if s.m[cfg] == st {
					delete(s.m, cfg)
				}
			}
		})
		return last
	}, nil
}

// onceTrue is the release function of an unshared state: the first call is
// the last instance.
func onceTrue() func() bool {
	var once sync.Once
	return func() bool {
		last := false
		once.Do(func() { last = true })
		return last
	}
}
