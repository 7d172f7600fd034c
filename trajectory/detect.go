package trajectory

import "go.opentelemetry.io/collector/pdata/pcommon"

// The attributes the convention readers tell a span's role from
// (detectRole). They are picked in the pass that makes the span's key
// signature (spanAttrsRoles) instead of each reader looking its keys up:
// every span is asked for all of them, and most are absent.
const (
	rkMastraType          = iota // mastra.span.type
	rkMCPMethod                  // mcp.method.name
	rkAIOperation                // ai.operationId (Vercel)
	rkGenAIOperation             // gen_ai.operation.name
	rkGenAIToolCallID            // gen_ai.tool.call.id
	rkGenAIOutputMessages        // gen_ai.output.messages
	rkGenAIProvider              // gen_ai.provider.name
	rkGenAISystem                // gen_ai.system
	rkOIKind                     // openinference.span.kind
	rkTLKind                     // traceloop.span.kind
	rkLLMRequestType             // llm.request.type
	rkCompletionRole             // gen_ai.completion.0.role
	rkCompletionContent          // gen_ai.completion.0.content
	rkTLEntityName               // traceloop.entity.name
	numRoleKeys
)

var roleKeys = [numRoleKeys]string{
	rkMastraType:          mastraSpanTypeKey,
	rkMCPMethod:           "mcp.method.name",
	rkAIOperation:         "ai.operationId",
	rkGenAIOperation:      "gen_ai.operation.name",
	rkGenAIToolCallID:     "gen_ai.tool.call.id",
	rkGenAIOutputMessages: "gen_ai.output.messages",
	rkGenAIProvider:       "gen_ai.provider.name",
	rkGenAISystem:         "gen_ai.system",
	rkOIKind:              "openinference.span.kind",
	rkTLKind:              "traceloop.span.kind",
	rkLLMRequestType:      "llm.request.type",
	rkCompletionRole:      "gen_ai.completion.0.role",
	rkCompletionContent:   "gen_ai.completion.0.content",
	rkTLEntityName:        "traceloop.entity.name",
}

// roleKeyFirst[b] is 1 + the first role key whose keyBit is b (0: none),
// roleKeyNext[k] 1 + the next one with the same bit.
var roleKeyFirst, roleKeyNext = roleKeyChains()

func roleKeyChains() (first [256]uint8, next [numRoleKeys]uint8) {
	for k := numRoleKeys - 1; k >= 0; k-- {
		b := keyBit(roleKeys[k])
		next[k] = first[b]
		first[b] = uint8(k + 1)
	}
	return first, next
}

// roleAttrs are a span's values of the role keys.
type roleAttrs struct {
	vals [numRoleKeys]pcommon.Value
	has  uint16 // bit k: the span has roleKeys[k]
	// mcpScope: the span's instrumentation scope is isMCPScope (told once
	// per scope by Build, whose spans share it).
	mcpScope bool
}

// pick records v as the value of key k, whose keyBit is b, when k is a
// role key the span has not had yet (the first of duplicate keys counts,
// as pcommon.Map.Get finds).
func (p *roleAttrs) pick(b uint, k string, v pcommon.Value) {
	for i := roleKeyFirst[b&255]; i != 0; i = roleKeyNext[i-1] {
		if roleKeys[i-1] == k {
			if p.has&(1<<(i-1)) == 0 {
				p.has |= 1 << (i - 1)
				p.vals[i-1] = v
			}
			return
		}
	}
}

// get is the span's value of roleKeys[k] (attrMap.Get).
func (p *roleAttrs) get(k int) (pcommon.Value, bool) {
	return p.vals[k], p.has&(1<<k) != 0
}

// str is the span's value of roleKeys[k] as attrStr renders it.
func (p *roleAttrs) str(k int) string {
	if p.has&(1<<k) == 0 {
		return ""
	}
	return valueStr(p.vals[k])
}

// spanAttrsRoles is spanAttrs(m), picking the role keys' values into p in
// the same pass.
func spanAttrsRoles(m pcommon.Map, p *roleAttrs) attrMap {
	a := attrMap{Map: m}
	m.Range(func(k string, v pcommon.Value) bool {
		b := keyBit(k)
		a.mark(b)
		if roleKeyFirst[b&255] != 0 {
			p.pick(b, k, v)
		}
		return true
	})
	return a
}
