package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/triage-otel/triage/classifier/llm"
)

// The model is used when TRIAGE_LLM_BASE_URL (or --llm-endpoint) is set:
// the seed library's variable names.
const (
	envLLMBaseURL = "TRIAGE_LLM_BASE_URL"
	envLLMModel   = "TRIAGE_LLM_MODEL"
	envLLMAPIKey  = "TRIAGE_LLM_API_KEY"
)

// llmFlags are the model flags of classify and eval. The API key is only
// read from the environment, never from a flag (flags show in ps).
type llmFlags struct {
	endpoint    *string
	model       *string
	maxTokens   *int
	timeout     *time.Duration
	corrections *string // classify only: overrides by signature
}

func addLLMFlags(fs *flag.FlagSet, withCorrections bool) *llmFlags {
	f := &llmFlags{
		endpoint:  fs.String("llm-endpoint", "", "base `URL` of an OpenAI-compatible API (default $"+envLLMBaseURL+"); the model is asked about runs left unknown"),
		model:     fs.String("llm-model", "", "model `name` (default $"+envLLMModel+")"),
		maxTokens: fs.Int("llm-max-tokens", llm.DefaultMaxTokens, "bound of the model's answer (reasoning models need more)"),
		timeout:   fs.Duration("llm-timeout", llm.DefaultTimeout, "bound of one consultation (queue, attempts, back-off)"),
	}
	if withCorrections {
		f.corrections = fs.String("corrections", "", "JSONL `FILE` of corrections; those naming a signature override the answer for that error shape")
	}
	return f
}

// consultant returns the model consultant, nil when no endpoint is set.
func (f *llmFlags) consultant(cmd string, stderr io.Writer) (*llm.Consultant, bool) {
	endpoint := firstNonEmpty(*f.endpoint, os.Getenv(envLLMBaseURL))
	model := firstNonEmpty(*f.model, os.Getenv(envLLMModel))
	if endpoint == "" {
		if model != "" && *f.model != "" {
			fmt.Fprintf(stderr, "triage %s: --llm-model needs --llm-endpoint or $%s\n", cmd, envLLMBaseURL)
			return nil, false
		}
		if f.corrections != nil && *f.corrections != "" {
			fmt.Fprintf(stderr, "triage %s: --corrections needs a model endpoint (--llm-endpoint or $%s): corrections override model answers\n", cmd, envLLMBaseURL)
			return nil, false
		}
		return nil, true
	}
	o := llm.Options{
		Endpoint:  endpoint,
		Model:     model,
		APIKey:    os.Getenv(envLLMAPIKey),
		MaxTokens: *f.maxTokens,
		Timeout:   *f.timeout,
		// A batch the user started: the per-minute cap would only skip
		// items; the per-session cap still bounds a failing session.
		MaxCallsPerMinute: -1,
	}
	if f.corrections != nil && *f.corrections != "" {
		cs, err := llm.ReadCorrections(*f.corrections)
		if err != nil {
			fmt.Fprintf(stderr, "triage %s: %v\n", cmd, err)
			return nil, false
		}
		o.Corrections = cs
	}
	c, err := llm.New(o)
	if err != nil {
		fmt.Fprintf(stderr, "triage %s: model: %s\n", cmd, strings.ReplaceAll(err.Error(), "\n", "; "))
		return nil, false
	}
	return c, true
}

func firstNonEmpty(a, b string) string {
	if strings.TrimSpace(a) != "" {
		return strings.TrimSpace(a)
	}
	return strings.TrimSpace(b)
}

// explainConsultation prints what the model was sent (redacted), what it
// answered and what the gates did.
func explainConsultation(w io.Writer, model string, c *llm.Consultation) {
	if c == nil {
		return
	}
	fmt.Fprintf(w, "  model %s:", model)
	switch c.Outcome {
	case llm.OutcomeSkipped:
		fmt.Fprintf(w, " not asked (%s)\n", skipText(c.Gate))
		return
	}
	fmt.Fprintf(w, " signature %s\n", c.Signature)
	fmt.Fprintf(w, "    signature text: %s\n", clip(c.SignatureText))
	if c.Source == llm.SourceModel && c.Prompt != nil {
		fmt.Fprintln(w, "    sent (redacted):")
		for _, l := range strings.Split(strings.TrimRight(c.Prompt.User, "\n"), "\n") {
			fmt.Fprintf(w, "      | %s\n", l)
		}
	}
	switch {
	case c.Source == llm.SourceCorrection:
		fmt.Fprintf(w, "    answered by a correction (no call)")
		if c.Detail != "" {
			fmt.Fprintf(w, ": %s", c.Detail)
		}
		fmt.Fprintln(w)
	case c.Answer != nil && c.Source != llm.SourceModel:
		fmt.Fprintf(w, "    answer from the %s cache: %s %.2f %q\n", c.Source, c.Answer.FailureType, c.Answer.Confidence, c.Answer.Evidence)
	case c.Source == llm.SourceModel:
		fmt.Fprintf(w, "    answer (%d attempt(s), %v): %s\n", c.Attempts, c.Latency.Round(time.Millisecond), clip(orDash(c.Raw)))
	}
	switch c.Outcome {
	case llm.OutcomeAccepted:
		fmt.Fprintf(w, "    gates: accepted — %s\n", c.Answer.FailureType)
	case llm.OutcomeCorrected:
		fmt.Fprintln(w, "    gates: not applied to a human correction")
	case llm.OutcomeRejected:
		fmt.Fprintf(w, "    gates: rejected by %s — %s; the run stays unknown\n", c.Gate, c.Detail)
	case llm.OutcomeDeclined:
		fmt.Fprintln(w, "    gates: the answer is unknown; the run stays unknown")
	case llm.OutcomeFailed:
		fmt.Fprintf(w, "    no answer (%s): %s; the run stays unknown\n", c.Gate, clip(c.Detail))
	}
}

func skipText(reason string) string {
	switch reason {
	case "not_retryable":
		return "not_retryable: an unknown with a reason is final"
	case "no_evidence":
		return "no_evidence: no error text or code to ask about"
	case "rule":
		return "rule: the verdict rests on a configured rule"
	case llm.SkipSessionCap:
		return "session_cap: the session used its calls"
	case llm.SkipMinuteCap:
		return "minute_cap: max calls per minute reached"
	}
	return reason
}
