package guard

import (
	"fmt"
	"sort"
	"strings"

	"github.com/triage-otel/triage/recovery"
	"github.com/triage-otel/triage/trajectory"
)

// The cost guard: the cost of the run's model steps, per run and per
// session. A step's cost is what its span recorded, else its tokens priced
// by the configured table.

func (r *Run) checkCost(total, limit float64, scope string) {
	if limit <= 0 || total <= limit {
		return
	}
	r.trip(budgetTrip(Cost, r.lastUsageSpan,
		fmt.Sprintf("cost budget exceeded: %s cost %.6g, cost.max_per_%s is %.6g", scope, total, scope, limit)))
}

// priceTable prices tokens by model: an exact model name, else the
// longest configured name the model starts with ("gpt-4o-mini" prices
// "gpt-4o-mini-2024-07-18").
type priceTable struct {
	exact    map[string]Price
	prefixes []string // longest first
}

func newPriceTable(p map[string]Price) priceTable {
	t := priceTable{exact: p}
	for m := range p {
		t.prefixes = append(t.prefixes, m)
	}
	sort.Slice(t.prefixes, func(i, j int) bool {
		if len(t.prefixes[i]) != len(t.prefixes[j]) {
			return len(t.prefixes[i]) > len(t.prefixes[j])
		}
		return t.prefixes[i] < t.prefixes[j]
	})
	return t
}

func (t priceTable) price(model string) (Price, bool) {
	if p, ok := t.exact[model]; ok {
		return p, true
	}
	for _, m := range t.prefixes {
		if strings.HasPrefix(model, m) {
			return t.exact[m], true
		}
	}
	return Price{}, false
}

// usageOf is what one model step spent.
func (t priceTable) usageOf(st *trajectory.Step) recovery.Usage {
	return t.usage(st.Model, st.InputTokens, st.OutputTokens, st.Cost)
}

// usage is what a model call of model spent: its recorded cost, else its
// tokens priced.
func (t priceTable) usage(model string, inTokens, outTokens int64, cost float64) recovery.Usage {
	in, out := max(inTokens, 0), max(outTokens, 0)
	u := recovery.Usage{Tokens: in + out, Cost: cost}
	if u.Cost == 0 {
		if p, ok := t.price(model); ok {
			u.Cost = (float64(in)*p.InputPerMillion + float64(out)*p.OutputPerMillion) / 1e6
		}
	}
	return u
}

// UsageOf is what the model steps of finished runs spent, priced as the
// guards price them: for a caller that keeps session usage and sees runs
// that ended without being watched in flight.
func (g *Guards) UsageOf(runs []trajectory.Run) recovery.Usage {
	var u recovery.Usage
	for i := range runs {
		for k := range runs[i].Steps {
			if st := &runs[i].Steps[k]; st.Kind == trajectory.StepLLM {
				u = u.Add(g.prices.usageOf(st))
			}
		}
	}
	return u
}
