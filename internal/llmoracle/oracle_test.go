package llmoracle

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/classifier/llm"
	"github.com/triage-otel/triage/internal/evalset"
	"github.com/triage-otel/triage/trajectory"
)

// figures are what the measurement compares: typed items answered right,
// misroutes, false failures.
type figures struct {
	typed, correct, misroutes, falseFailures int
}

func (f figures) String() string {
	return fmt.Sprintf("recall %d/%d, misroutes %d, false failures %d", f.correct, f.typed, f.misroutes, f.falseFailures)
}

func figuresOf(s evalset.Set) figures {
	var f figures
	for _, it := range s.Items {
		if !it.Scorable() {
			continue
		}
		switch it.Kind {
		case evalset.KindMisroute:
			f.misroutes++
		case evalset.KindFalseFailure:
			f.falseFailures++
		}
		if it.Label != evalset.LabelNone && it.Label != "unknown" {
			f.typed++
			if it.Kind == evalset.KindCorrect {
				f.correct++
			}
		}
	}
	return f
}

// scorer classifies every capture and corpus entry; ablate replaces the
// typed answers of codes and text rules by unknown first; model, when set,
// is consulted after.
type scorer struct {
	t       *testing.T
	labels  string
	corpora []string
}

func (sc scorer) score(model *llm.Consultant, ablate bool) []evalset.Set {
	t := sc.t
	classify := func(cl *classifier.Classifier, td ptrace.Traces, opts ...trajectory.Option) []evalset.RunResult {
		out := evalset.ClassifyTraces(cl, td, opts...)
		for i := range out {
			if ablate {
				out[i].Verdict = Ablate(out[i].Verdict)
			}
			if model != nil {
				out[i].Verdict, out[i].Consultation = model.Review(context.Background(), cl, &out[i].Run, out[i].Verdict)
			}
		}
		return out
	}
	caps, err := evalset.LoadLabels(sc.labels)
	if err != nil {
		t.Fatal(err)
	}
	capSet := evalset.Set{Name: sc.labels}
	for _, c := range caps {
		td, err := evalset.ReadTraces(c.Path)
		if err != nil || td.SpanCount() == 0 {
			continue
		}
		opts, err := evalset.CaptureOptions(c.Path)
		if err != nil {
			t.Fatal(err)
		}
		cl, err := classifier.New(classifier.Options{Constraints: c.Constraints})
		if err != nil {
			t.Fatal(err)
		}
		it := evalset.Judge(c.Label, false, classify(cl, td, opts...))
		it.Name = c.Name()
		capSet.Items = append(capSet.Items, it)
	}
	sets := []evalset.Set{capSet}
	cl, _ := classifier.New(classifier.Options{})
	for _, path := range sc.corpora {
		entries, err := evalset.LoadCorpus(path)
		if err != nil {
			t.Fatal(err)
		}
		set := evalset.Set{Name: path, AllowUnknown: true}
		for i, e := range entries {
			it := evalset.Judge(e.Label, true, classify(cl, evalset.CorpusTraceFor(path, i, e)))
			it.Name = fmt.Sprintf("%s#%d", filepath.Base(path), i)
			set.Items = append(set.Items, it)
		}
		sets = append(sets, set)
	}
	return sets
}

func (sc scorer) oracle(seed uint64) *Oracle {
	o := New(seed)
	if err := o.LearnCaptures(sc.labels); err != nil {
		sc.t.Fatal(err)
	}
	for _, c := range sc.corpora {
		if err := o.LearnCorpus(c); err != nil {
			sc.t.Fatal(err)
		}
	}
	return o
}

func consultant(t *testing.T, url string) *llm.Consultant {
	model, err := llm.New(llm.Options{Endpoint: url + "/v1", Model: "noisy-oracle", Backoff: time.Millisecond,
		MaxCallsPerMinute: -1, MaxCallsPerSession: -1})
	if err != nil {
		t.Fatal(err)
	}
	return model
}

// compare logs the figures per set and in all, checks that the model added
// no misroute or false failure and turned no passing item into a failing
// one, and returns the totals.
func compare(t *testing.T, what string, base, with []evalset.Set, strict bool) (figures, figures) {
	var totBase, totWith figures
	for i := range base {
		b, w := figuresOf(base[i]), figuresOf(with[i])
		t.Logf("%s %-22s without model: %v; with: %v", what, filepath.Base(base[i].Name), b, w)
		if strict && (w.misroutes > b.misroutes || w.falseFailures > b.falseFailures) {
			t.Errorf("%s %s: the model added misroutes or false failures", what, base[i].Name)
		}
		for j, it := range base[i].Items {
			if strict && it.Pass && !with[i].Items[j].Pass {
				t.Errorf("%s: %s passed without the model, fails with it (%s, got %s)", what, it.Name, with[i].Items[j].Kind, with[i].Items[j].Predicted)
			}
		}
		totBase = totBase.add(b)
		totWith = totWith.add(w)
	}
	t.Logf("%s ALL                    without model: %v; with: %v", what, totBase, totWith)
	return totBase, totWith
}

func (f figures) add(g figures) figures {
	return figures{f.typed + g.typed, f.correct + g.correct, f.misroutes + g.misroutes, f.falseFailures + g.falseFailures}
}

func behaviours(o *Oracle) string {
	var out []string
	for b, n := range o.Counts() {
		out = append(out, fmt.Sprintf("%s %d", b, n))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// The measurement of issue 9, run with -v for the figures: a noisy oracle
// model (right answers, right answers at low confidence, wrong answers with
// invented quotes or at low confidence, types the structure contradicts,
// malformed JSON, server errors; a confident wrong type on every item
// labelled unknown) on the captures and the corpora. As the pipeline is,
// the model adds no misroute and no false failure; with the codes and text
// rules ablated (every typed answer they gave turned into a reasonless
// unknown — what phrasings never seen look like) recall rises and the
// model still adds no misroute. With the adversarial mix (5% confident
// wrong answers quoting the input) the figures are logged, not asserted:
// no gate can tell those from right answers when the structure does not
// contradict them.
func TestNoisyOracleRaisesRecallWithoutMisroutes(t *testing.T) {
	wd, _ := os.Getwd()
	shared, err := evalset.FindShared(wd)
	if err != nil {
		t.Fatalf("shared data: %v", err)
	}
	corpora, _ := filepath.Glob(filepath.Join(shared, "corpora", "*.json"))
	sort.Strings(corpora)
	sc := scorer{t: t, labels: filepath.Join(shared, "fixtures", "frameworks", "labels.json"), corpora: corpora}
	base, ablated := sc.score(nil, false), sc.score(nil, true)
	for _, seed := range []uint64{1, 2, 3} {
		o := sc.oracle(seed)
		srv := httptest.NewServer(o)
		model := consultant(t, srv.URL)
		compare(t, fmt.Sprintf("seed %d as is:  ", seed), base, sc.score(model, false), true)
		b, w := compare(t, fmt.Sprintf("seed %d ablated:", seed), ablated, sc.score(model, true), true)
		if w.correct <= b.correct {
			t.Errorf("seed %d ablated: recall did not rise (%d → %d)", seed, b.correct, w.correct)
		}
		t.Logf("seed %d oracle behaviours: %s", seed, behaviours(o))
		srv.Close()

		adv := sc.oracle(seed).Adversarial()
		srv = httptest.NewServer(adv)
		compare(t, fmt.Sprintf("seed %d adversarial ablated:", seed), ablated, sc.score(consultant(t, srv.URL), true), false)
		t.Logf("seed %d adversarial behaviours: %s", seed, behaviours(adv))
		srv.Close()
	}
}
