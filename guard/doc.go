// Package guard watches agent runs while they are still going: the spans
// of a trace are fed as they arrive, before the run's root span (which
// ends last), and each guard trips at most once per run when its rule
// holds on what was seen so far:
//
//   - loop (loop.go): the classifier's loop rule on the tool calls so far
//     (classifier.LoopDetector, the rule Classify applies to the whole run);
//   - repeated_failure (repeated_failure.go): the same tool failing N times
//     in a row (each call read by classifier.ClassifyCall);
//   - tokens (tokens.go): input + output tokens per run and per session;
//   - cost (cost.go): cost per run and per session, from gen_ai.usage.cost
//     when recorded, else a configured price table;
//   - wall_clock (wall_clock.go): how long the run has been going, from its
//     spans' timestamps.
//
// Incremental: each span is read once (trajectory.SpanReader, Build's own
// per-span reading) and folded into the run's state — its calls, the loop
// detector's window, per-tool failure streaks, usage sums — so a batch
// costs O(its spans), never a re-read of what was seen. The state follows
// Build where it matters to the guards: the nested spans of one call (SDK
// span under a framework span) merge into one step (trajectory.SameCall,
// MergeNested), and tool spans, the calls models requested and the results
// fed back to them are linked into calls as Classify links them. Spans are
// expected roughly in end order, as SDK exporters send them; within a
// batch they are sorted by end time. When spans arrive in end order, what
// the guards see is a prefix of the run Classify sees at the end, so the
// loop guard trips exactly when the final classification finds the loop
// (on the same call), and a run whose final verdict is ok trips neither
// the loop nor the repeated-failure guard.
//
// Exported API: New(Config, classifier, session keys) → Guards, which reads
// batches of Span (Read, outside any lock) and makes a Run per trace
// (NewRun; Add/AddRead return the Trip values, each naming its Guard and
// giving the recovery.Input of an in-flight decision; UsageOf, session
// budgets; ReadStep, the spans' readings for trajectory.Build at the
// root, WithReadSteps); the configuration (Config,
// LoopConfig, RepeatedFailureConfig, TokensConfig, CostConfig, Price,
// WallClockConfig, DefaultConfig, DefaultPolicy); Name and Names.
//
// The package depends on pdata, trajectory, classifier and recovery only
// (no collector packages).
package guard
