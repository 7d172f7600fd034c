package evalset

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/trajectory"
)

// The support matrix: what triage answers for every stack × scenario of a
// labelled capture set, the versions the captures were made with, and, per
// stack, what its instrumentation does not show. Everything in it is
// computed from the captures (and, for framework versions, the capture
// harness's package manifest), through the same path as eval: nothing is
// typed by hand.

// Matrix is the support matrix of one labels file.
type Matrix struct {
	Labels    string // the labels file, as given
	Scenarios []string
	Stacks    []StackSupport
}

// StackSupport is one stack's row of the matrix.
type StackSupport struct {
	Name string
	// Cells by scenario.
	Cells map[string]Item
	// Instrumentation are the instrumentation scopes (name@version) the
	// stack's captures were exported by.
	Instrumentation []string
	// Packages are the framework and instrumentation packages the harness
	// ran the stack with (name@version), when the harness was given.
	Packages []string
	// Gaps say what the stack's instrumentation does not show, as measured
	// on its captures.
	Gaps []string
}

// BuildMatrix scores every capture of labelsPath and measures what each
// stack's spans show. harnessDir, when not empty, is the capture harness
// (run-all.mjs and package-lock.json) that names each stack's packages.
func BuildMatrix(labelsPath, harnessDir string) (Matrix, error) {
	caps, err := LoadLabels(labelsPath)
	if err != nil {
		return Matrix{}, err
	}
	var pkgs map[string][]string
	if harnessDir != "" {
		if pkgs, err = harnessPackages(harnessDir); err != nil {
			return Matrix{}, err
		}
	}
	m := Matrix{Labels: labelsPath}
	seenScenario := map[string]bool{}
	byStack := map[string]*stackMeasure{}
	var order []string
	for _, c := range caps {
		if !seenScenario[c.Scenario] {
			seenScenario[c.Scenario] = true
			m.Scenarios = append(m.Scenarios, c.Scenario)
		}
		sm := byStack[c.Framework]
		if sm == nil {
			sm = &stackMeasure{support: StackSupport{Name: c.Framework, Cells: map[string]Item{}}, scopes: map[string]bool{}}
			byStack[c.Framework] = sm
			order = append(order, c.Framework)
		}
		it := ScoreCapture(c)
		sm.support.Cells[c.Scenario] = it
		sm.measure(c, it)
	}
	sort.Strings(order)
	for _, name := range order {
		sm := byStack[name]
		s := sm.support
		for sc := range sm.scopes {
			s.Instrumentation = append(s.Instrumentation, sc)
		}
		sort.Strings(s.Instrumentation)
		s.Packages = pkgs[name]
		s.Gaps = sm.gaps()
		m.Stacks = append(m.Stacks, s)
	}
	return m, nil
}

// stackMeasure accumulates what a stack's captures show.
type stackMeasure struct {
	support StackSupport
	scopes  map[string]bool

	failed         int // captures labelled with a failure that have spans
	noErrorStatus  int // ... of which no span has an error status or exception
	rootLost       int // ... of which a run's root span never arrived
	empty          int // captures without spans
	toolSteps      int // tool steps from tool spans
	toolTurns      int // model steps that finished asking for tools
	toolTurnsBare  int // ... that recorded none of the calls
	resultsFedBack int // model steps whose input carried tool results
	contentOnLogs  int // captures whose model output text is only in the log events
}

func (sm *stackMeasure) measure(c Capture, it Item) {
	td, err := ReadTraces(c.Path)
	if err != nil {
		return
	}
	if td.SpanCount() == 0 {
		sm.empty++
		return
	}
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			sc := sss.At(j).Scope()
			if sc.Name() == "" {
				continue
			}
			name := sc.Name()
			if v := sc.Version(); v != "" {
				name += "@" + v
			}
			sm.scopes[name] = true
		}
	}
	// Measured on the trajectory eval classifies: spans joined with the
	// capture's log events.
	opts, err := captureLogs(c.Path)
	if err != nil {
		return
	}
	runs := trajectory.Build(td, opts...)
	if c.Label != LabelNone {
		sm.failed++
		if !anyErrorEvidence(td) {
			sm.noErrorStatus++
		}
		for _, r := range runs {
			if !r.RootFound {
				sm.rootLost++
				break
			}
		}
	}
	for _, r := range runs {
		for i := range r.Steps {
			st := &r.Steps[i]
			switch st.Kind {
			case trajectory.StepTool:
				sm.toolSteps++
			case trajectory.StepLLM:
				if len(st.InputResults) > 0 {
					sm.resultsFedBack++
				}
				for _, fr := range st.FinishReasons {
					if trajectory.FinishReasonClass(fr) == trajectory.FinishToolCalls {
						sm.toolTurns++
						if len(st.Requested) == 0 {
							sm.toolTurnsBare++
						}
						break
					}
				}
			}
		}
	}
	if len(opts) > 0 && hasOutputText(runs) && !hasOutputText(trajectory.Build(td)) {
		sm.contentOnLogs++
	}
}

func hasOutputText(runs []trajectory.Run) bool {
	for _, r := range runs {
		for i := range r.Steps {
			if r.Steps[i].OutputText != "" {
				return true
			}
		}
	}
	return false
}

// anyErrorEvidence reports whether any span of td has an error status or
// an exception event.
func anyErrorEvidence(td ptrace.Traces) bool {
	found := false
	trajectory.ForEachSpan(td, func(sp ptrace.Span) {
		if found {
			return
		}
		if sp.Status().Code() == ptrace.StatusCodeError {
			found = true
			return
		}
		evs := sp.Events()
		for i := 0; i < evs.Len(); i++ {
			if evs.At(i).Name() == "exception" {
				found = true
				return
			}
		}
	})
	return found
}

// gaps turns the measures into what the instrumentation does not show.
func (sm *stackMeasure) gaps() []string {
	var g []string
	if sm.toolSteps == 0 && (sm.toolTurns > 0 || sm.resultsFedBack > 0) {
		g = append(g, "tool calls leave no span: a tool's outcome is only the result fed back to the model")
	}
	if sm.toolTurns > 0 && sm.toolTurnsBare == sm.toolTurns {
		g = append(g, fmt.Sprintf("the model's tool calls are not recorded (%d model steps ended asking for tools, none names a call): no tool-manifest or JSON-Schema check", sm.toolTurns))
	}
	if sm.contentOnLogs > 0 {
		g = append(g, fmt.Sprintf("message content is only in the log events (%d captures): without the logs pipeline, no output text and no constraint check", sm.contentOnLogs))
	}
	if sm.failed > 0 && sm.noErrorStatus > 0 {
		g = append(g, fmt.Sprintf("%d of %d failed runs show no error status or exception on any span", sm.noErrorStatus, sm.failed))
	}
	if sm.rootLost > 0 {
		g = append(g, fmt.Sprintf("%d of %d failed runs lost their root span (spans of a failing call are never ended)", sm.rootLost, sm.failed))
	}
	if sm.empty > 0 {
		g = append(g, fmt.Sprintf("%d captures hold no span at all (a failing first model call exports nothing)", sm.empty))
	}
	var missed []string
	for _, sc := range sortedKeys(sm.support.Cells) {
		it := sm.support.Cells[sc]
		if it.Scorable() && !it.Pass {
			missed = append(missed, fmt.Sprintf("%s (answered %s)", sc, it.Predicted))
		}
	}
	if len(missed) > 0 {
		g = append(g, "not told apart: "+strings.Join(missed, ", "))
	}
	return g
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// answerCodes abbreviate the answers in the matrix cells.
var answerCodes = map[string]string{
	string(classifier.WrongToolCalled):   "WT",
	string(classifier.SchemaMismatch):    "SM",
	string(classifier.LoopDetected):      "LD",
	string(classifier.ExternalFault):     "EF",
	string(classifier.Timeout):           "TO",
	string(classifier.ContextOverflow):   "CO",
	string(classifier.ConstraintIgnored): "CI",
	string(classifier.PlanIncomplete):    "PI",
	string(classifier.Unknown):           "U",
	LabelNone:                            "ok",
}

func answerCode(s string) string {
	if c, ok := answerCodes[s]; ok {
		return c
	}
	return s
}

// cell renders what triage answered: the answer's code, "rec" for a run
// that recovered, "✗" before an answer that is not the label, "·" for a
// capture without spans, "" for a scenario the stack was not captured in.
func cell(it Item, ok bool) string {
	if !ok {
		return ""
	}
	switch it.Kind {
	case KindNotScorable:
		return "·"
	case KindError:
		return "✗ error"
	}
	ans := answerCode(it.Predicted)
	if it.Predicted == LabelNone {
		for _, r := range it.Runs {
			if r.Verdict.Outcome == classifier.OutcomeRecovered {
				ans = "rec"
				break
			}
		}
	}
	if !it.Pass {
		return "✗ " + ans
	}
	return ans
}

// WriteMarkdown writes the matrix as Markdown: the stack × scenario table
// (scenarios as rows: there are more of them), its legend, then one line
// per stack with its versions and what its instrumentation does not show.
func (m Matrix) WriteMarkdown(w io.Writer) {
	fmt.Fprintf(w, "Generated by `triage eval --matrix` from `%s`: every cell is what triage answered for that capture.\n\n", m.Labels)
	fmt.Fprint(w, "| scenario (label) |")
	for _, s := range m.Stacks {
		fmt.Fprintf(w, " %s |", s.Name)
	}
	fmt.Fprint(w, "\n|---|")
	for range m.Stacks {
		fmt.Fprint(w, "---|")
	}
	fmt.Fprintln(w)
	totals := make([][2]int, len(m.Stacks))
	for _, sc := range m.Scenarios {
		label := m.rowLabel(sc)
		fmt.Fprintf(w, "| %s (%s) |", sc, answerCode(label))
		for i, s := range m.Stacks {
			it, ok := s.Cells[sc]
			c := cell(it, ok)
			if ok && it.Label != label {
				c += fmt.Sprintf(" (label %s)", answerCode(it.Label))
			}
			fmt.Fprintf(w, " %s |", c)
			if ok && it.Scorable() {
				totals[i][1]++
				if it.Pass {
					totals[i][0]++
				}
			}
		}
		fmt.Fprintln(w)
	}
	fmt.Fprint(w, "| **right / scored** |")
	for _, t := range totals {
		fmt.Fprintf(w, " %d/%d |", t[0], t[1])
	}
	fmt.Fprint(w, "\n\n")
	codes := make([]string, 0, len(answerCodes))
	for _, name := range append(append([]string{}, failureTypeNames()...), LabelNone) {
		codes = append(codes, fmt.Sprintf("%s %s", answerCodes[name], name))
	}
	fmt.Fprintf(w, "Codes: %s; rec = recovered (a run labelled `none` may recover); ✗ = not the label; (label X) = this stack's ground truth differs from the row's; · = the capture holds no span.\n\n", strings.Join(codes, ", "))
	for _, s := range m.Stacks {
		fmt.Fprintf(w, "- **%s** — instrumentation (from the spans): %s", s.Name, orNone(s.Instrumentation))
		if len(s.Packages) > 0 {
			fmt.Fprintf(w, "; packages (from the harness): %s", strings.Join(s.Packages, ", "))
		}
		fmt.Fprintln(w, ".")
		for _, g := range s.Gaps {
			fmt.Fprintf(w, "  - %s\n", g)
		}
	}
}

// rowLabel is the label most stacks carry for a scenario (frameworks
// differ: one may recover from a fault another treats as fatal).
func (m Matrix) rowLabel(sc string) string {
	n := map[string]int{}
	best := ""
	for _, s := range m.Stacks {
		if it, ok := s.Cells[sc]; ok {
			n[it.Label]++
			if k := n[it.Label]; k > n[best] || k == n[best] && it.Label < best {
				best = it.Label
			}
		}
	}
	return best
}

func failureTypeNames() []string {
	out := make([]string, 0, len(classifier.FailureTypes))
	for _, t := range classifier.FailureTypes {
		out = append(out, string(t))
	}
	return out
}

func orNone(xs []string) string {
	if len(xs) == 0 {
		return "none named"
	}
	return strings.Join(xs, ", ")
}

// frameworkEntry matches one entry of the harness's FRAMEWORKS list:
// { id: '…', script: '…', …, packages: ['…', …] }.
var frameworkEntry = regexp.MustCompile(`(?s)id:\s*'([^']+)',\s*script:\s*'([^']+)'.*?packages:\s*\[([^\]]*)\]`)

// harnessPackages reads, for every stack of the capture harness, the
// packages it runs (run-all.mjs, FRAMEWORKS) at the versions its lock file
// resolved (package-lock.json; a workspace stack's own copy first).
func harnessPackages(dir string) (map[string][]string, error) {
	src, err := os.ReadFile(filepath.Join(dir, "run-all.mjs"))
	if err != nil {
		return nil, err
	}
	lockData, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		return nil, err
	}
	var lock struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(lockData, &lock); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "package-lock.json"), err)
	}
	out := map[string][]string{}
	for _, m := range frameworkEntry.FindAllStringSubmatch(string(src), -1) {
		id, script := m[1], m[2]
		workspace := ""
		if strings.HasPrefix(script, "stacks/") {
			workspace = filepath.ToSlash(filepath.Dir(script)) + "/"
		}
		for _, p := range regexp.MustCompile(`'([^']+)'`).FindAllStringSubmatch(m[3], -1) {
			name := p[1]
			if i := strings.LastIndexByte(name, '@'); i > 0 {
				name = name[:i] // "openai@4": the range the harness asked for
			}
			v := lock.Packages[workspace+"node_modules/"+name].Version
			if v == "" {
				v = lock.Packages["node_modules/"+name].Version
			}
			if v == "" {
				v = "?"
			}
			out[id] = append(out[id], name+"@"+v)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no FRAMEWORKS entries found", filepath.Join(dir, "run-all.mjs"))
	}
	return out, nil
}
