package strategy

import "context"

// ResumeFromSubgoal continues from the first incomplete sub-goal instead of
// starting over. The sub-goal comes from the config (Subgoal) or from the
// run (Input.Subgoal); without one the runtime resumes from its own first
// incomplete sub-goal, unless RequireSubgoal is set, in which case the
// failure escalates rather than turning into a blind retry.
type ResumeFromSubgoal struct {
	Max            int // default 2
	Subgoal        string
	Hint           string
	RequireSubgoal bool
}

func (s ResumeFromSubgoal) Kind() string     { return "resume_from_subgoal" }
func (s ResumeFromSubgoal) MaxAttempts() int { return orDefault(s.Max, 2) }

func (s ResumeFromSubgoal) Decide(_ context.Context, env *Env, path string, attempt int) (Result, error) {
	l := leaf{kind: s.Kind(), max: s.MaxAttempts()}
	subgoal := s.Subgoal
	if subgoal == "" {
		subgoal = env.Subgoal
	}
	if subgoal == "" && s.RequireSubgoal {
		return l.result(path, attempt, Action{Kind: ActionEscalate,
			Reason: "resume_from_subgoal requires a sub-goal and the run named none"}), nil
	}
	hint := s.Hint
	if hint == "" {
		hint = "The run stopped before every sub-goal was complete. Continue from the first incomplete sub-goal; do not redo completed ones."
	}
	return l.result(path, attempt, Action{Kind: ActionResume, Subgoal: subgoal, Hint: hint}), nil
}
