package classifier

import "github.com/triage-otel/triage/trajectory"

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

// Classifier classifies runs. It is safe for concurrent use.
type Classifier struct {
	opts Options
}

// New returns a Classifier, or an error naming the invalid option.
func New(opts Options) (*Classifier, error) {
	return &Classifier{opts: opts}, nil
}

// Classify returns the verdict of run. extra are incidents found outside
// the library (e.g. by OTTL rules in the processor); they are merged with
// the classifier's own.
func (c *Classifier) Classify(run *trajectory.Run, extra ...Incident) Verdict {
	_ = run
	return Verdict{Outcome: OutcomeOK} // PLACEHOLDER: being implemented (issue 2)
}
