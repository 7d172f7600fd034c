package trajectory

import "testing"

// Instrumentations that drop the assistant's tool calls (an empty text
// part) and record the tool outputs as "user" messages: what follows the
// empty assistant turn is what the tools returned.
func TestResultsAfterAnEmptyAssistantTurn(t *testing.T) {
	in := `[{"role":"system","parts":[{"type":"text","content":"You help with invoices."}]},
	 {"role":"user","parts":[{"type":"text","content":"Total of invoice 12?"}]},
	 {"role":"assistant","parts":[{"type":"text","content":""}]},
	 {"role":"user","parts":[{"type":"text","content":"Invoice 12 does not exist in ledger"}]}]`
	var st Step
	applyInput(&st, decodeMessages(in))
	if len(st.InputResults) != 1 || st.InputResults[0].Content != "Invoice 12 does not exist in ledger" {
		t.Fatalf("results = %+v", st.InputResults)
	}

	// An assistant turn with text is an answer: a user message after it
	// is the user speaking, not a tool.
	in = `[{"role":"user","parts":[{"type":"text","content":"Hi"}]},
	 {"role":"assistant","parts":[{"type":"text","content":"Which invoice?"}]},
	 {"role":"user","parts":[{"type":"text","content":"Number 12"}]}]`
	st = Step{}
	applyInput(&st, decodeMessages(in))
	eq(t, "results after an answer", len(st.InputResults), 0)

	// Real tool messages are taken as they are.
	in = `[{"role":"assistant","parts":[{"type":"text","content":""}]},
	 {"role":"tool","parts":[{"type":"text","content":"Error: Tool \"pay\" not found."}]},
	 {"role":"user","parts":[{"type":"text","content":"and?"}]}]`
	st = Step{}
	applyInput(&st, decodeMessages(in))
	if len(st.InputResults) != 1 || st.InputResults[0].Content != `Error: Tool "pay" not found.` {
		t.Fatalf("tool results = %+v", st.InputResults)
	}
}
