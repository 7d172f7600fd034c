package guard

import (
	"unsafe"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/trajectory"
)

// What a run holds, for a caller that bounds the memory of a trace (the
// processor's max_trace_bytes). The estimate is made from the readings
// before they are taken in, so a caller can count it before it holds
// them: it counts every text a step's reading holds as if it were a copy
// (most are views of the span's own attribute values) and each span as if
// it could be a nested span of its call (whose reading is then kept beside
// the merged one).

var (
	stepRecBytes  = int(unsafe.Sizeof(stepRec{}))
	heldStepBytes = int(unsafe.Sizeof(heldStep{}))
	callRecBytes  = int(unsafe.Sizeof(callRec{}))
	toolCallBytes = int(unsafe.Sizeof(trajectory.ToolCall{}))
	resultBytes   = int(unsafe.Sizeof(trajectory.ToolResult{}))
	errorBytes    = int(unsafe.Sizeof(trajectory.ErrorInfo{}))
	// nodeBytes is a span's node and its ID in the run's indexes.
	nodeBytes = int(unsafe.Sizeof(indexEntry[[8]byte, spanNode]{})) + int(unsafe.Sizeof(indexEntry[[8]byte, ints]{}))
	// perCallBytes is a call's record, its entries in the run's indexes
	// and its place in the loop rule.
	perCallBytes = callRecBytes + int(unsafe.Sizeof(indexEntry[string, int32]{}))*2 +
		int(unsafe.Sizeof(indexEntry[resultKey, struct{}]{})) + 4*4 + int(unsafe.Sizeof(classifier.Incident{}))
)

// indexEntry is an entry of a run's indexes as smallmap keeps it.
type indexEntry[K comparable, V any] struct {
	k K
	v V
}

// RunBytes is what a run holds before any span: its state and the loop
// rule's.
func (g *Guards) RunBytes() int { return g.runBytes }

// Bytes estimates what a run's state grows by when it takes this span in
// (AddRead): the span's node, and for a model or tool call span its
// reading and the calls it may add. See the note above on what it counts.
func (rd *Read) Bytes() int {
	n := nodeBytes
	st := &rd.read.Step
	switch rd.read.Role {
	case trajectory.SpanLLM, trajectory.SpanTool, trajectory.SpanPart:
	default:
		return n
	}
	// The step's record and its groups of fields; a nested span's reading
	// is kept again beside the merged one, with groups of its own.
	groups := groupsOf(st).bytes()
	n += stepRecBytes + groups + heldStepBytes + groups + len(st.Kind) + len(st.ToolName) + len(st.ToolCallID) + len(st.Arguments) + len(st.Result) +
		len(st.StatusMessage) + len(st.Model) + len(st.Provider) + len(st.OutputText)
	for _, e := range st.Errors {
		n += errorBytes + len(e.Type) + len(e.Message) + len(e.Code)
	}
	for _, f := range st.FinishReasons {
		n += 16 + len(f)
	}
	for _, c := range st.Requested {
		n += toolCallBytes + perCallBytes + len(c.ID) + len(c.Name) + len(c.Arguments)
	}
	for _, rs := range [2][]trajectory.ToolResult{st.InputResults, st.ToolResults} {
		for _, r := range rs {
			n += resultBytes + perCallBytes + len(r.CallID) + len(r.Name) + len(r.Content)
		}
	}
	if rd.read.Role == trajectory.SpanTool {
		n += perCallBytes
	}
	return n
}

// bytes is what the groups of fields take.
func (g heldGroups) bytes() int {
	n := 0
	for _, f := range [...]struct {
		kept bool
		size uintptr
	}{{g.tool, unsafe.Sizeof(heldTool{})}, {g.llm, unsafe.Sizeof(heldLLM{})}, {g.errs || g.odd, unsafe.Sizeof(heldErrs{})}, {g.odd, unsafe.Sizeof(heldOdd{})}} {
		if f.kept {
			n += int(f.size)
		}
	}
	return n
}
