package trajectory

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDumpFixtures prints the trajectories of the captures named by
// TRAJ_DUMP (a glob under the fixtures directory); it is a debugging aid
// and skips otherwise.
func TestDumpFixtures(t *testing.T) {
	pat := os.Getenv("TRAJ_DUMP")
	if pat == "" {
		t.Skip("set TRAJ_DUMP=<stack>/<scenario>.json to print trajectories")
	}
	files, _ := filepath.Glob(filepath.Join(fixturesDir, pat))
	for _, f := range files {
		if strings.HasSuffix(f, ".logs.json") || strings.HasSuffix(f, "labels.json") {
			continue
		}
		runs := Build(loadFixture(t, f))
		fmt.Printf("##### %s: %d run(s)\n", f, len(runs))
		for _, r := range runs {
			fmt.Print(describeRun(&r))
		}
	}
}

func describeRun(r *Run) string {
	var b strings.Builder
	fmt.Fprintf(&b, "RUN root=%s %q found=%v svc=%q agent=%q session=%q finish=%q orphans=%d dups=%d spans=%d\n",
		r.RootSpanID, r.RootName, r.RootFound, r.Service, r.Agent, r.Session, r.FinishReason, r.Orphans, r.Duplicates, len(r.SpanIDs))
	for _, s := range r.Steps {
		fmt.Fprintf(&b, "  STEP %s/%s %s %q", s.Kind, s.Convention, s.SpanID, s.Name)
		if s.Kind == StepTool {
			fmt.Fprintf(&b, " tool=%q id=%q args=%.80q result=%.80q resErr=%v", s.ToolName, s.ToolCallID, s.Arguments, s.Result, s.ResultIsError)
		} else {
			fmt.Fprintf(&b, " model=%q finish=%v tok=%d/%d out=%.60q", s.Model, s.FinishReasons, s.InputTokens, s.OutputTokens, s.OutputText)
			for _, c := range s.Requested {
				fmt.Fprintf(&b, "\n      REQ %s %q %.80q", c.ID, c.Name, c.Arguments)
			}
			var names []string
			for _, d := range s.Offered {
				names = append(names, fmt.Sprintf("%s(schema=%d)", d.Name, len(d.Schema)))
			}
			if len(names) > 0 {
				fmt.Fprintf(&b, "\n      OFFERED %s", strings.Join(names, " "))
			}
			for _, x := range s.InputResults {
				fmt.Fprintf(&b, "\n      RESULT %s %q err=%v %.80q", x.CallID, x.Name, x.IsError, x.Content)
			}
		}
		if s.Failed() {
			fmt.Fprintf(&b, "\n      FAILED status=%v %.80q http=%d rpc=%d/%v", s.StatusError, s.StatusMessage, s.HTTPStatus, s.JSONRPCCode, s.HasJSONRPC)
			for _, e := range s.Errors {
				fmt.Fprintf(&b, "\n      ERR type=%q code=%q %.80q", e.Type, e.Code, e.Message)
			}
		}
		b.WriteString("\n")
	}
	for _, e := range r.SpanErrors {
		fmt.Fprintf(&b, "  SPANERR %s %q root=%v status=%v %.80q http=%d rpc=%d/%v", e.SpanID, e.Name, e.IsRoot, e.StatusError, e.StatusMessage, e.HTTPStatus, e.JSONRPCCode, e.HasJSONRPC)
		for _, x := range e.Errors {
			fmt.Fprintf(&b, "\n      ERR type=%q code=%q %.80q", x.Type, x.Code, x.Message)
		}
		b.WriteString("\n")
	}
	return b.String()
}
