// Package llmoracle is a scripted OpenAI-compatible model for measuring
// the model gates: it knows the labels of a capture set and of string
// corpora (by the error evidence it is sent) and answers with noise of
// every kind the gates are meant to stop — low confidence, invented
// quotes, types the structure contradicts, malformed JSON, server errors —
// and, on every item labelled unknown, a confident wrong type quoting the
// input (the seed library's hybrid failure). It is deterministic for a
// seed. It is a measuring instrument, not a classifier: it reads labels.
package llmoracle

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/classifier/llm"
	"github.com/triage-otel/triage/internal/evalset"
)

// Behaviour is what the oracle did for one request.
type Behaviour string

const (
	Correct          Behaviour = "correct"            // right type, confident, a real quote
	CorrectLow       Behaviour = "correct_low"        // right type below the threshold
	WrongInvented    Behaviour = "wrong_invented"     // wrong type, confident, a quote not in the input
	WrongLow         Behaviour = "wrong_low"          // wrong type, low confidence, a real quote
	WrongStructural  Behaviour = "wrong_structural"   // a type the trace's structure contradicts, confident, a real quote
	Malformed        Behaviour = "malformed"          // prose instead of JSON
	ServerError      Behaviour = "server_error"       // 500 on the first attempt, then the right answer
	OverturnUnknown  Behaviour = "overturn_unknown"   // labelled unknown: a confident wrong type with a real quote
	NotInLabels      Behaviour = "not_in_labels"      // evidence the oracle was not given: unknown
	ThinkThenCorrect Behaviour = "think_then_correct" // reasoning text, then a fenced right answer
	// WrongQuoted is a confident wrong type quoting the input: no gate
	// can tell it from a right answer unless the structure contradicts
	// it. Only in the adversarial mix.
	WrongQuoted Behaviour = "wrong_quoted"
)

// mix is the share of each behaviour for items with a type (per mille).
var mix = []struct {
	b    Behaviour
	perm int
}{
	{Correct, 450}, {ThinkThenCorrect, 100}, {CorrectLow, 100}, {WrongInvented, 100},
	{WrongLow, 100}, {WrongStructural, 50}, {Malformed, 50}, {ServerError, 50},
}

// adversarialShare is the share (per mille) of WrongQuoted answers in the
// adversarial mix, taken from Correct.
const adversarialShare = 50

// Oracle serves POST /v1/chat/completions.
type Oracle struct {
	seed        uint64
	adversarial bool
	labels      map[string]classifier.FailureType // evidence section → label

	mu       sync.Mutex
	attempts map[string]int
	counts   map[Behaviour]int
}

// New returns an oracle for the given seed with no labels.
func New(seed uint64) *Oracle {
	return &Oracle{seed: seed, labels: map[string]classifier.FailureType{}, attempts: map[string]int{}, counts: map[Behaviour]int{}}
}

// Adversarial adds confident wrong answers quoting the input to the mix.
func (o *Oracle) Adversarial() *Oracle {
	o.adversarial = true
	return o
}

// Counts returns how often each behaviour was used.
func (o *Oracle) Counts() map[Behaviour]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make(map[Behaviour]int, len(o.counts))
	for k, v := range o.counts {
		out[k] = v
	}
	return out
}

// learn indexes the failures of the runs under label, by the evidence
// section the consultant would send for them — also for runs the rules
// typed, so that a measurement with the rules ablated finds them.
func (o *Oracle) learn(label string, results []evalset.RunResult) {
	ft, ok := classifier.ParseFailureType(label)
	if !ok {
		return // "none": ok or recovered runs are never asked about
	}
	cl, _ := classifier.New(classifier.Options{})
	red := llm.DefaultRedactor()
	for i := range results {
		r := &results[i]
		v := Ablate(r.Verdict)
		if s, skip := cl.Subject(&r.Run, &v); skip == "" {
			p := llm.BuildPrompt(&r.Run, &s, red)
			o.labels[llm.EvidenceSection(p.User)] = ft
		}
	}
}

// Ablate turns a verdict typed by codes or text rules into the reasonless
// unknown the rules would have left on a phrasing they do not know: what
// the model gates face on traces never seen. Structure (manifest, schema,
// finish reasons, step limits, loops), constraints, custom rules and
// not-retryable unknowns are kept.
func Ablate(v classifier.Verdict) classifier.Verdict {
	if v.Outcome != classifier.OutcomeFailed || v.FailureType == classifier.Unknown {
		return v
	}
	switch v.Signal {
	case classifier.SignalHTTPStatus, classifier.SignalJSONRPCCode, classifier.SignalProviderCode,
		classifier.SignalExceptionType, classifier.SignalTextRule:
		v.FailureType, v.Signal, v.Rule, v.Confidence = classifier.Unknown, classifier.SignalNone, "", 0
	}
	return v
}

// LearnCaptures indexes a labels.json capture set.
func (o *Oracle) LearnCaptures(labelsPath string) error {
	caps, err := evalset.LoadLabels(labelsPath)
	if err != nil {
		return err
	}
	for _, c := range caps {
		td, err := evalset.ReadTraces(c.Path)
		if err != nil {
			continue
		}
		opts, err := evalset.CaptureOptions(c.Path)
		if err != nil {
			return err
		}
		cl, err := classifier.New(classifier.Options{Constraints: c.Constraints})
		if err != nil {
			return err
		}
		o.learn(c.Label, evalset.ClassifyTraces(cl, td, opts...))
	}
	return nil
}

// LearnCorpus indexes a string corpus, turned into traces as eval does.
func (o *Oracle) LearnCorpus(path string) error {
	entries, err := evalset.LoadCorpus(path)
	if err != nil {
		return err
	}
	cl, err := classifier.New(classifier.Options{})
	if err != nil {
		return err
	}
	for i, e := range entries {
		o.learn(e.Label, evalset.ClassifyTraces(cl, evalset.CorpusTraceFor(path, i, e)))
	}
	return nil
}

func (o *Oracle) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.Error(w, "POST /v1/chat/completions only", http.StatusNotFound)
		return
	}
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) == 0 {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	user := req.Messages[len(req.Messages)-1].Content
	status, content := o.answer(user)
	if status != http.StatusOK {
		w.WriteHeader(status)
		fmt.Fprint(w, `{"error":{"message":"scripted server error"}}`)
		return
	}
	c, _ := json.Marshal(content)
	fmt.Fprintf(w, `{"object":"chat.completion","model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}]}`, req.Model, c)
}

func (o *Oracle) answer(user string) (int, string) {
	ev := llm.EvidenceSection(user)
	label, known := o.labels[ev]
	h := o.hash(ev)
	b := NotInLabels
	switch {
	case !known:
	case label == classifier.Unknown:
		b = OverturnUnknown
	default:
		n := int(h % 1000)
		if o.adversarial {
			if n < adversarialShare {
				b = WrongQuoted
				break
			}
			n -= adversarialShare
		}
		for _, m := range mix {
			if n < m.perm {
				b = m.b
				break
			}
			n -= m.perm
		}
	}
	o.mu.Lock()
	o.attempts[ev]++
	attempt := o.attempts[ev]
	o.counts[b]++
	o.mu.Unlock()

	quote := realQuote(ev)
	wrong := otherType(label, h)
	switch b {
	case Correct:
		return 200, answerJSON(label, 0.9, quote)
	case ThinkThenCorrect:
		return 200, "<think>The error evidence reads like " + string(label) + ".</think>\n```json\n" + answerJSON(label, 0.88, quote) + "\n```"
	case CorrectLow:
		return 200, answerJSON(label, 0.55, quote)
	case WrongInvented:
		return 200, answerJSON(wrong, 0.93, "the upstream service returned 503 Service Unavailable")
	case WrongLow:
		return 200, answerJSON(wrong, 0.5, quote)
	case WrongStructural:
		return 200, answerJSON(structuralLie(user, h), 0.95, quote)
	case Malformed:
		return 200, "I think this is probably a " + string(label) + " problem."
	case ServerError:
		if attempt == 1 {
			return 500, ""
		}
		return 200, answerJSON(label, 0.9, quote)
	case WrongQuoted:
		return 200, answerJSON(wrong, 0.92, quote)
	case OverturnUnknown:
		return 200, answerJSON(otherType(classifier.Unknown, h), 0.95, quote)
	}
	return 200, answerJSON(classifier.Unknown, 0, "")
}

func (o *Oracle) hash(s string) uint64 {
	var seed [8]byte
	binary.LittleEndian.PutUint64(seed[:], o.seed)
	sum := sha256.Sum256(append(seed[:], s...))
	return binary.LittleEndian.Uint64(sum[:8])
}

// askable are the types a model may be asked to give.
var askable = []classifier.FailureType{classifier.WrongToolCalled, classifier.SchemaMismatch, classifier.ExternalFault, classifier.Timeout, classifier.ContextOverflow}

func otherType(not classifier.FailureType, h uint64) classifier.FailureType {
	for i := range askable {
		t := askable[(int(h>>20)+i)%len(askable)]
		if t != not {
			return t
		}
	}
	return classifier.Unknown
}

// structuralLie is a type the prompt's structure contradicts.
func structuralLie(user string, h uint64) classifier.FailureType {
	switch {
	case strings.Contains(user, "the arguments validate against the schema"):
		return classifier.SchemaMismatch
	case strings.Contains(user, "was among the offered tools") && strings.Contains(user, "a tool span executed the call"):
		return classifier.WrongToolCalled
	}
	if h%2 == 0 {
		return classifier.LoopDetected
	}
	return classifier.PlanIncomplete
}

// realQuote is a verbatim piece of the evidence: the start of its longest
// line's value.
func realQuote(ev string) string {
	best := ""
	for _, l := range strings.Split(ev, "\n") {
		if i := strings.Index(l, ": "); i >= 0 {
			l = l[i+2:]
		}
		if len(l) > len(best) {
			best = l
		}
	}
	r := []rune(best)
	if len(r) > 60 {
		r = r[:60]
	}
	return strings.TrimSpace(string(r))
}

func answerJSON(ft classifier.FailureType, conf float64, quote string) string {
	b, _ := json.Marshal(map[string]any{"failure_type": ft, "confidence": conf, "evidence": quote})
	return string(b)
}
