package breaker

import "strings"

// Scopes: one breaker state per (name, scope value).
const (
	ScopeGlobal  = "global"
	ScopeService = "service"
	ScopeAgent   = "agent"
	ScopeTool    = "tool"
)

// NormScope reads the unset scope as global.
func NormScope(s string) string {
	if s == "" {
		return ScopeGlobal
	}
	return s
}

// ScopeValue is the value of the run that selects a breaker's state in scope.
func ScopeValue(scope, service, agent, tool string) string {
	switch scope {
	case ScopeService:
		return service
	case ScopeAgent:
		return agent
	case ScopeTool:
		return tool
	}
	return ""
}

// Key is the state key of breaker name for one scope value.
func Key(name, scope, value string) string {
	if scope == "" || scope == ScopeGlobal {
		return name
	}
	if value == "" {
		value = "-"
	}
	return name + "|" + scope + "=" + strings.ReplaceAll(value, "|", "_")
}
