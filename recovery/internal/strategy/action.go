package strategy

// ActionKind is what the agent runtime is asked to do.
type ActionKind string

const (
	// ActionRetry re-runs the failed step or run, after DelayMS, with Hint.
	ActionRetry ActionKind = "retry"
	// ActionReplan discards the current plan and plans again with Hint.
	ActionReplan ActionKind = "replan"
	// ActionResume continues from Subgoal (or the first incomplete one).
	ActionResume ActionKind = "resume"
	// ActionRollback restores CheckpointID (or the latest checkpoint) and re-runs.
	ActionRollback ActionKind = "rollback"
	// ActionFallback switches to Target (another model, tool or cache).
	ActionFallback ActionKind = "fallback"
	// ActionSuspend pauses the run until a human decides.
	ActionSuspend ActionKind = "suspend"
	// ActionEscalate hands the failure to a human or operator.
	ActionEscalate ActionKind = "escalate"
	// ActionAbort stops the run for good.
	ActionAbort ActionKind = "abort"
)

// ActionKinds lists every action kind in a stable order.
var ActionKinds = []ActionKind{
	ActionRetry, ActionReplan, ActionResume, ActionRollback, ActionFallback,
	ActionSuspend, ActionEscalate, ActionAbort,
}

// Action is the instruction of a decision. Every field is always present in
// the JSON document (empty when unused) so consumers need no presence checks.
type Action struct {
	Kind         ActionKind `json:"kind"`
	DelayMS      int64      `json:"delay_ms"`
	Hint         string     `json:"hint"`
	Target       string     `json:"target"`
	CheckpointID string     `json:"checkpoint_id"`
	Subgoal      string     `json:"subgoal"`
	// Reason says why this action was chosen (exhausted budget, open
	// breaker, the classifier's reason for an unknown failure, ...).
	Reason string `json:"reason"`
}
