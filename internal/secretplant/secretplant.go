// Package secretplant plants secrets and personal data in agent traces and
// finds them in what the triage components emit. Tests use it to check that
// nothing planted in a span leaves the processor unredacted.
package secretplant

import (
	"encoding/json"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Form is one shape of secret or personal data.
type Form struct {
	Name  string
	Value string
	// Glue says whether the form is recognisable glued inside other text
	// (a distinctive prefix such as AKIA or sk-proj-), so it is planted
	// glued as well as after "_".
	Glue bool
	// Fragments are the parts whose presence in an output is a leak.
	Fragments []string
}

// Forms are the planted shapes. The values are made up for the tests; the
// card numbers are the networks' published test numbers.
var Forms = []Form{
	{Name: "aws_access_key", Value: "AKIA2E0A8F3B244C9986", Glue: true, Fragments: []string{"AKIA2E0A8F3B244C9986", "2E0A8F3B244C9986"}},
	{Name: "openai_project_key", Value: "sk-proj-Pl4nt3dOpenAIk3yZx9Qw8Er7Ty6Ui5", Glue: true, Fragments: []string{"Pl4nt3dOpenAIk3y", "Zx9Qw8Er7Ty6Ui5"}},
	{Name: "anthropic_key", Value: "sk-ant-api03-Pl4nt3dAnthr0picK3yAbCdEfGh", Glue: true, Fragments: []string{"Pl4nt3dAnthr0picK3y"}},
	{Name: "legacy_sk_key", Value: "sk-Pl4nt3dL3gacyK3y0123456789ab", Fragments: []string{"Pl4nt3dL3gacyK3y"}},
	{Name: "github_token", Value: "ghp_Pl4nt3dGitHubT0k3n0123456789abcdefgh", Glue: true, Fragments: []string{"Pl4nt3dGitHubT0k3n"}},
	{Name: "google_key", Value: "AIzaSyPl4nt3dG00gl3K3y0123456789abcdefg", Glue: true, Fragments: []string{"Pl4nt3dG00gl3K3y"}},
	{Name: "jwt", Value: "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwbGFudGVkLXVzZXIifQ.Pl4nt3dJWTs1gnatur3xyz", Glue: true, Fragments: []string{"eyJzdWIiOiJwbGFudGVkLXVzZXIifQ", "Pl4nt3dJWTs1gnatur3"}},
	{Name: "bearer_token", Value: "Bearer Pl4nt3dB3arerT0k3n0123", Fragments: []string{"Pl4nt3dB3arerT0k3n"}},
	{Name: "url_credentials", Value: "https://alice:Pl4nt3dPassw0rd@db.example.com/orders", Glue: true, Fragments: []string{"Pl4nt3dPassw0rd"}},
	{Name: "password_pair", Value: "password=Pl4nt3dHunter2pw", Fragments: []string{"Pl4nt3dHunter2pw"}},
	{Name: "email", Value: "jane.planted@example.com", Glue: true, Fragments: []string{"jane.planted@example.com", "jane.planted"}},
	{Name: "visa", Value: "4111111111111111", Glue: true, Fragments: []string{"4111111111111111"}},
	{Name: "visa_spaced", Value: "4111 1111 1111 1111", Glue: true, Fragments: []string{"4111 1111 1111 1111"}},
	{Name: "mastercard_dashed", Value: "5500-0000-0000-0004", Glue: true, Fragments: []string{"5500-0000-0000-0004", "5500000000000004"}},
	{Name: "amex", Value: "378282246310005", Glue: true, Fragments: []string{"378282246310005"}},
}

// Payload is every form, each after "_" and, where recognisable, glued,
// starting with form number first (rotating the order, so each form leads
// in some plantings and is never only in a part cut by truncation).
func Payload(first int) string {
	var b strings.Builder
	n := len(Forms)
	for i := range n {
		f := Forms[(first+i)%n]
		b.WriteString("_key_")
		b.WriteString(f.Value)
		if f.Glue {
			b.WriteString(" x")
			b.WriteString(f.Value)
			b.WriteString("y")
		}
	}
	return b.String()
}

// Find returns the names of the forms one of whose fragments occurs in s.
func Find(s string) []string {
	var out []string
	for _, f := range Forms {
		for _, frag := range f.Fragments {
			if strings.Contains(s, frag) {
				out = append(out, f.Name)
				break
			}
		}
	}
	return out
}

// structural attribute keys hold the conventions' enumerations (operation,
// span kind, finish reason, provider, ...) that tell the trajectory builder
// what a span is; planting there would make the spans unreadable rather
// than test redaction. Names, ids, messages, arguments and results are all
// planted.
func structural(key string) bool {
	k := strings.ToLower(key)
	for _, s := range []string{"operation", "span.kind", "span_kind", "spankind", "kind", "finish_reason", "finishreason",
		"system", "provider", "request.type", "method", "role", "type", "model", "status_code", "code", "url", "schema"} {
		if strings.HasSuffix(k, s) || strings.Contains(k, s+".") {
			return true
		}
	}
	return false
}

// Plant appends a payload to every user-controlled string of td: resource
// and span attributes (inside JSON values too, which stay valid JSON),
// span names, status messages, event attributes. file selects the rotation
// of the payload. It returns how many strings it changed.
func Plant(td ptrace.Traces, file int) int {
	payload := Payload(file % len(Forms))
	n := 0
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		n += plantMap(rs.Resource().Attributes(), payload)
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				s := spans.At(k)
				s.SetName(s.Name() + payload)
				n++
				if msg := s.Status().Message(); msg != "" {
					s.Status().SetMessage(msg + payload)
					n++
				}
				n += plantMap(s.Attributes(), payload)
				for e := 0; e < s.Events().Len(); e++ {
					n += plantMap(s.Events().At(e).Attributes(), payload)
				}
			}
		}
	}
	return n
}

func plantMap(m pcommon.Map, payload string) int {
	n := 0
	for k, v := range m.All() {
		if structural(k) {
			continue
		}
		n += plantValue(v, payload)
	}
	return n
}

func plantValue(v pcommon.Value, payload string) int {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		s, changed := plantString(v.Str(), payload)
		v.SetStr(s)
		return changed
	case pcommon.ValueTypeMap:
		return plantMap(v.Map(), payload)
	case pcommon.ValueTypeSlice:
		n := 0
		for i := 0; i < v.Slice().Len(); i++ {
			n += plantValue(v.Slice().At(i), payload)
		}
		return n
	}
	return 0
}

// plantString plants in a JSON object or array's strings, else appends.
func plantString(s, payload string) (string, int) {
	t := strings.TrimSpace(s)
	if len(t) > 1 && (t[0] == '{' || t[0] == '[') {
		var doc any
		if json.Unmarshal([]byte(t), &doc) == nil {
			n := 0
			doc = plantJSON(doc, "", payload, &n)
			if out, err := json.Marshal(doc); err == nil {
				return string(out), n
			}
		}
	}
	return s + payload, 1
}

func plantJSON(v any, key, payload string, n *int) any {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			x[k] = plantJSON(val, k, payload, n)
		}
		return x
	case []any:
		for i := range x {
			x[i] = plantJSON(x[i], key, payload, n)
		}
		return x
	case string:
		if structural(key) {
			return x
		}
		s, c := plantString(x, payload)
		*n += c
		return s
	}
	return v
}
