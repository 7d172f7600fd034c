package llm

import (
	"encoding/json"
	"errors"
	"regexp"
	"strconv"
	"strings"

	"github.com/triage-otel/triage/classifier"
)

// Answer is what the model is asked for: one failure type, its confidence
// and a verbatim quote from the evidence that supports it.
type Answer struct {
	FailureType classifier.FailureType `json:"failure_type"`
	Confidence  float64                `json:"confidence"`
	Evidence    string                 `json:"evidence"`
}

// errNoAnswer is returned for content that holds no usable answer.
var errNoAnswer = errors.New("no answer: the content holds no JSON object with a known failure_type and a confidence within 0..1")

var (
	// Reasoning models put their thoughts first; some servers keep them
	// in the content.
	thinkBlock = regexp.MustCompile(`(?is)<(think|thinking|reasoning)>.*?</(?:think|thinking|reasoning)>`)
	fenceBlock = regexp.MustCompile("(?s)```(?:json|JSON)?[ \t]*\n?(.*?)```")
)

// maxContent bounds the content parsed.
const maxContent = 64 << 10

// parseAnswer reads the model's content: one JSON object, optionally after
// reasoning text (<think>…</think> or plain prose), inside a fenced block,
// or followed by trailing text. Anything else is no answer.
func parseAnswer(content string) (Answer, error) {
	if len(content) > maxContent {
		content = content[:maxContent]
	}
	content = thinkBlock.ReplaceAllString(content, " ")
	var candidates []string
	for _, m := range fenceBlock.FindAllStringSubmatch(content, -1) {
		candidates = append(candidates, m[1])
	}
	candidates = append(candidates, content)
	for _, c := range candidates {
		if a, ok := firstAnswerObject(c); ok {
			return a, nil
		}
	}
	return Answer{}, errNoAnswer
}

// firstAnswerObject decodes, from each '{' in turn, one JSON value and
// keeps the first object that is a valid answer; text around it is
// ignored.
func firstAnswerObject(s string) (Answer, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] != '{' {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(s[i:]))
		dec.UseNumber()
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			continue
		}
		if a, ok := answerFrom(obj); ok {
			return a, true
		}
	}
	return Answer{}, false
}

func answerFrom(obj map[string]any) (Answer, bool) {
	ts, ok := obj["failure_type"].(string)
	if !ok {
		return Answer{}, false
	}
	ft, ok := classifier.ParseFailureType(strings.ToLower(strings.TrimSpace(ts)))
	if !ok {
		return Answer{}, false
	}
	conf, ok := number(obj["confidence"])
	if !ok || conf < 0 || conf > 1 {
		return Answer{}, false
	}
	ev, _ := obj["evidence"].(string)
	return Answer{FailureType: ft, Confidence: conf, Evidence: ev}, true
}

// number accepts a JSON number or a numeric string ("0.9").
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil
	}
	return 0, false
}
