// Package llm asks a model — any OpenAI-compatible chat completions API —
// about the failed runs that structure, codes and rules left unknown, and
// keeps an answer only when it passes the gates:
//
//   - never asked about a not-retryable unknown (a reason such as auth,
//     billing, content filter, compliance: those answers are final), nor
//     about a run with no error evidence;
//   - the answer's confidence is at least the threshold;
//   - its quote occurs verbatim (case-insensitive, whitespace-normalised)
//     in the error evidence that was sent;
//   - its type does not contradict the trace's structure (wrong_tool_called
//     for a tool that was offered and ran, schema_mismatch for arguments
//     that validate, timeout for a step that ended in milliseconds, types
//     only the trajectory can show).
//
// Rejected answers leave the run unknown and are counted by gate. Accepted
// ones carry signal llm, rule = the model name, and a capped confidence.
// What is sent is redacted with the recovery redactor. Calls are bounded:
// per-session and per-minute caps, a concurrency limit, a timeout, retries
// on 429/5xx with back-off; answers are cached by error signature in memory
// and optionally in Redis, and human corrections override them.
//
// Exported API: New(Options) → Consultant (asks about a run's unknowns:
// Consultation, Answer, Pending; reports through an Observer); the prompt
// (BuildPrompt, Prompt, EvidenceSection, DefaultRedactor); the answer
// caches (SharedCache, NewRedisCache, RedisCache, RedisCacheOptions,
// Signature); human corrections (Correction, ParseCorrections,
// ReadCorrections).
//
// The package depends on pdata only among collector packages.
package llm
