package classifier

import (
	"testing"

	"github.com/triage-otel/triage/trajectory"
)

func TestConcluded(t *testing.T) {
	call := tc("c1", "lookup", `{"city":"Paris"}`)
	cases := []struct {
		name string
		run  *trajectory.Run
		want bool
	}{
		{"nil run", nil, false},
		{"no steps", &newRun().run, false},
		{"final answer", &newRun().llm(call).tool("lookup", "c1", `{"city":"Paris"}`).answer("sunny").run, true},
		{"ends on a tool call", &newRun().llm(call).tool("lookup", "c1", `{"city":"Paris"}`).run, false},
		{"ends asking for tools", &newRun().llm(call).run, false},
		{"ends with a tool_calls finish and no parsed call", &newRun().add(trajectory.Step{Kind: trajectory.StepLLM, FinishReasons: []string{"tool_calls"}}).run, false},
		{"ends on a model call that shows no answer", &newRun().llm(call).tool("lookup", "c1", `{"city":"Paris"}`).add(trajectory.Step{Kind: trajectory.StepLLM}).run, false},
		{"ends on a model call with output text only", &newRun().add(trajectory.Step{Kind: trajectory.StepLLM, OutputText: "done"}).run, true},
		{"ends on a failed model call", &newRun().llm(call).add(trajectory.Step{Kind: trajectory.StepLLM, StatusError: true, HTTPStatus: 503}).run, false},
		{"recovered tool error, then an answer", &newRun().llm(call).toolErr("lookup", "c1", `{}`, "Error", "boom").llm(call).tool("lookup", "c1", `{"city":"Paris"}`).answer("ok").run, true},
	}
	for _, c := range cases {
		if got := Concluded(c.run); got != c.want {
			t.Errorf("%s: Concluded = %v, want %v", c.name, got, c.want)
		}
	}
}
