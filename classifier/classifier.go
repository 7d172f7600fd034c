package classifier

import (
	"fmt"

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
}

// Default loop settings.
const (
	DefaultLoopThreshold = 3
	DefaultLoopWindow    = 6
)

// Classifier classifies runs. It is safe for concurrent use: Classify keeps
// its state per call, and the compiled-schema cache it shares is locked.
type Classifier struct {
	opts        Options
	constraints constraintSet
	schemas     *schemaCache
}

// New returns a Classifier, or an error naming the invalid option.
func New(opts Options) (*Classifier, error) {
	if opts.LoopThreshold == 0 {
		opts.LoopThreshold = DefaultLoopThreshold
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
	}
	opts.Constraints = append([]string(nil), opts.Constraints...)
	return &Classifier{opts: opts, constraints: newConstraintSet(opts.Constraints), schemas: &schemaCache{}}, nil
}

// Classify returns the verdict of run. extra are incidents found outside
// the library (e.g. by OTTL rules in the processor); they are merged with
// the classifier's own.
func (c *Classifier) Classify(run *trajectory.Run, extra ...Incident) Verdict {
	return c.classify(run, extra)
}
