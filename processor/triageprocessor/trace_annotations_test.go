package triageprocessor

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/triage-otel/triage/internal/smallmap"
)

// TestTraceAnnotationsFindEverySpan holds the annotated spans' index (a
// list, and the Go map it moves to past smallmap.MaxSlice) to what two maps by span
// ID held: each span finds the incident and root lists last set for it,
// a span never set finds none, and an incident list is reported only once
// set.
func TestTraceAnnotationsFindEverySpan(t *testing.T) {
	for _, n := range []int{1, smallmap.MaxSlice, smallmap.MaxSlice + 1, 5 * smallmap.MaxSlice} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			ta := getTraceAnnotations()
			defer ta.release()
			incident := map[uint64][]annotation{}
			root := map[uint64][]annotation{}
			for i := 1; i <= n; i++ {
				id := uint64(i)
				inc := []annotation{strAnn(attrFailureType, fmt.Sprint("incident ", i))}
				ta.setIncident(spanID(id), inc)
				incident[id] = inc
				if i%3 == 0 {
					// A span that is both, set in either order.
					r := []annotation{strAnn(attrVerdict, fmt.Sprint("root ", i))}
					ta.setRoot(spanID(id), r)
					root[id] = r
				}
			}
			for i := n + 1; i <= n+n/2+1; i++ {
				// Spans that are roots only, and one set twice.
				r := []annotation{strAnn(attrVerdict, fmt.Sprint("root ", i))}
				ta.setRoot(spanID(uint64(i)), r)
				r = append(r, strAnn(attrReason, "again"))
				ta.setRoot(spanID(uint64(i)), r)
				root[uint64(i)] = r
			}
			for i := 1; i <= 2*n+2; i++ {
				id := uint64(i)
				s := ta.find(spanID(id))
				wantInc, hasInc := incident[id]
				wantRoot, hasRoot := root[id]
				if !hasInc && !hasRoot {
					assert.Nil(t, s, "span %d was never set", i)
					continue
				}
				require.NotNil(t, s, "span %d", i)
				assert.Equal(t, wantInc, s.incident, "span %d incident", i)
				assert.Equal(t, wantRoot, s.root, "span %d root", i)
				got, ok := ta.incidentOf(spanID(id))
				assert.Equal(t, hasInc, ok, "span %d has an incident list", i)
				assert.Equal(t, wantInc, got, "span %d incidentOf", i)
			}
			assert.Nil(t, ta.find(spanID(uint64(1<<40))), "an id never set")
		})
	}
}

// TestTraceAnnotationsReleased holds release to leaving nothing of a
// trace's annotations for the next one.
func TestTraceAnnotationsReleased(t *testing.T) {
	ta := getTraceAnnotations()
	for i := 1; i <= 3*smallmap.MaxSlice; i++ {
		ta.setIncident(spanID(uint64(i)), []annotation{strAnn(attrFailureType, "x")})
	}
	ta.release()
	for i := 1; i <= 3*smallmap.MaxSlice; i++ {
		assert.Nil(t, ta.find(spanID(uint64(i))), "span %d after release", i)
	}
	assert.Zero(t, ta.index.Len(), "the span index after release")
	assert.Zero(t, ta.annotated)
}
