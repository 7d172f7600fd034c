package classifier

import (
	"fmt"
	"sync"
	"time"

	"github.com/triage-otel/triage/trajectory"
)

// Options configures a Classifier.
type Options struct {
	// Constraints are forbidden strings; one found in an LLM step's output
	// makes that step a constraint_ignored incident.
	Constraints []string
	// LoopThreshold is how many equal tool calls in LoopWindow steps make a
	// loop. Default 3.
	LoopThreshold int
	// LoopWindow is the number of consecutive tool calls looked at. Default 6.
	LoopWindow int
	// LoopSimilarity, when > 0, also counts calls whose canonical arguments
	// are at least this similar (0..1) as equal.
	LoopSimilarity float64
	// SilentCallTimeout is how long a run's last model call must have been
	// waited for, when it came back with nothing at all (no text, no tool
	// call, no finish reason, no output tokens) and the run ended there,
	// to be read as a call cut off by a deadline (timeout). A shorter wait
	// is a failure of unknown class. Default 5s.
	SilentCallTimeout time.Duration
}

// Default loop settings.
const (
	DefaultLoopThreshold = 3
	DefaultLoopWindow    = 6
	// DefaultSilentCallTimeout: provider SDKs' own deadlines are tens of
	// seconds; agents that set one of a few seconds still wait longer than
	// a model takes to start answering.
	DefaultSilentCallTimeout = 5 * time.Second
)

// Classifier classifies runs. It is safe for concurrent use: Classify keeps
// its state per call, and the compiled-schema cache it shares is locked.
type Classifier struct {
	opts        Options
	constraints constraintSet
	schemas     *schemaCache
	results     *resultMemo  // resultmemo.go
	texts       *sharedTexts // textmemo.go
	// scratch lends Classify its classification and lists (classify.go).
	scratch *sync.Pool
}

// New returns a Classifier, or an error naming the invalid option.
func New(opts Options) (*Classifier, error) {
	if opts.LoopThreshold == 0 {
		opts.LoopThreshold = DefaultLoopThreshold
	}
	if opts.SilentCallTimeout == 0 {
		opts.SilentCallTimeout = DefaultSilentCallTimeout
	}
	if opts.LoopWindow == 0 {
		opts.LoopWindow = max(DefaultLoopWindow, opts.LoopThreshold)
	}
	switch {
	case opts.LoopThreshold < 2:
		return nil, fmt.Errorf("classifier: LoopThreshold must be at least 2, got %d", opts.LoopThreshold)
	case opts.LoopWindow < opts.LoopThreshold:
		return nil, fmt.Errorf("classifier: LoopWindow (%d) must be at least LoopThreshold (%d)", opts.LoopWindow, opts.LoopThreshold)
	case opts.LoopSimilarity < 0 || opts.LoopSimilarity > 1 || opts.LoopSimilarity != opts.LoopSimilarity:
		return nil, fmt.Errorf("classifier: LoopSimilarity must be within 0..1, got %v", opts.LoopSimilarity)
	case opts.SilentCallTimeout < 0:
		return nil, fmt.Errorf("classifier: SilentCallTimeout must not be negative, got %v", opts.SilentCallTimeout)
	}
	opts.Constraints = append([]string(nil), opts.Constraints...)
	return &Classifier{opts: opts, constraints: newConstraintSet(opts.Constraints), schemas: &schemaCache{}, results: newResultMemo(), texts: newSharedTexts(), scratch: &sync.Pool{}}, nil
}

// Classify returns the verdict of run. extra are incidents found outside
// the library (e.g. by OTTL rules in the processor); they are merged with
// the classifier's own.
func (c *Classifier) Classify(run *trajectory.Run, extra ...Incident) Verdict {
	return c.classify(run, extra)
}
