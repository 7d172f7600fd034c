package trajectory

import (
	"strings"
	"sync"
)

// Tool definitions repeat on every LLM span of every run of an agent: the
// same list, byte for byte, each time. They are decoded once per distinct
// text and the decoded list is shared (Step.Offered is read-only), across
// Build calls and SpanReaders, in a cache bounded by entries and bytes.

const (
	// maxToolDefEntries and maxToolDefBytes bound the cache; when it is
	// full it starts over (agents offer a handful of distinct lists, so
	// this happens only with unusually many distinct definitions).
	maxToolDefEntries = 1024
	maxToolDefBytes   = 16 << 20
	// maxCachedToolDefBytes is the largest definition text cached; larger
	// ones are decoded each time.
	maxCachedToolDefBytes = 256 << 10
)

type toolDefCache struct {
	mu    sync.RWMutex
	defs  map[string][]ToolDef
	bytes int
}

var toolDefs = &toolDefCache{}

// get returns the decoded definitions of s.
func (c *toolDefCache) get(s string) []ToolDef {
	if s == "" {
		return nil
	}
	if len(s) > maxCachedToolDefBytes {
		return decodeToolDefs(s)
	}
	c.mu.RLock()
	d, ok := c.defs[s]
	c.mu.RUnlock()
	if ok {
		return d
	}
	d = decodeToolDefs(s)
	size := 2*len(s) + 64 // the key and the schemas copied out of it, roughly
	c.mu.Lock()
	if c.defs == nil || len(c.defs) >= maxToolDefEntries || c.bytes+size > maxToolDefBytes {
		c.defs, c.bytes = make(map[string][]ToolDef), 0
	}
	// The key is cloned: s may share memory with a whole request.
	c.defs[strings.Clone(s)] = d
	c.bytes += size
	c.mu.Unlock()
	return d
}

// toolDefs decodes a tool definition list (see toolDefCache).
func (c *spanCtx) toolDefs(s string) []ToolDef { return toolDefs.get(s) }
