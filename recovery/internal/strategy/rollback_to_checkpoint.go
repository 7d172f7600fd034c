package strategy

import "context"

// RollbackToCheckpoint restores a named checkpoint (or, when none is named by
// the config or the run, the latest one) and re-runs from there.
type RollbackToCheckpoint struct {
	Max          int // default 1
	CheckpointID string
	Hint         string
}

func (s RollbackToCheckpoint) Kind() string     { return "rollback_to_checkpoint" }
func (s RollbackToCheckpoint) MaxAttempts() int { return orDefault(s.Max, 1) }

func (s RollbackToCheckpoint) Decide(_ context.Context, env *Env, path string, attempt int) (Result, error) {
	id := s.CheckpointID
	if id == "" {
		id = env.CheckpointID
	}
	l := leaf{kind: s.Kind(), max: s.MaxAttempts()}
	return l.result(path, attempt, Action{Kind: ActionRollback, CheckpointID: id, Hint: s.Hint}), nil
}
