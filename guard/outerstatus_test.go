package guard

import (
	"reflect"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/triage-otel/triage/trajectory"
)

// A step record keeps one bit of its outermost span's status code
// (recOuterOK) because MergeNested tells only Ok from the other codes.
// This fails when MergeNested comes to treat another code apart (say
// Error) while the record still folds it into Unset.
func TestOuterStatusBitIsWhatMergeNestedReads(t *testing.T) {
	outer := trajectory.Step{Kind: trajectory.StepTool, ToolName: "lookup"}
	inner := trajectory.Step{Kind: trajectory.StepTool, ToolName: "lookup", StatusError: true, StatusMessage: "upstream 503", HTTPStatus: 503}
	for _, code := range []ptrace.StatusCode{ptrace.StatusCodeUnset, ptrace.StatusCodeOk, ptrace.StatusCodeError} {
		var rec stepRec
		if code == ptrace.StatusCodeOk {
			rec.mark(recOuterOK)
		}
		want, got := outer, outer
		trajectory.MergeNested(&want, code, &inner)
		trajectory.MergeNested(&got, rec.outerStatus(), &inner)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("outer status %v: merged as the record keeps it %+v, as the span has it %+v", code, got, want)
		}
	}
	// The bit matters: an explicit OK keeps the nested error out.
	merged := outer
	trajectory.MergeNested(&merged, ptrace.StatusCodeOk, &inner)
	if merged.StatusError {
		t.Errorf("an outer span with status Ok took its nested span's error")
	}
}
