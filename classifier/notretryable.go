package classifier

// Not-retryable failures are clear but belong to no agent-failure class:
// retrying, replanning or switching tools cannot help, a human must act.
// They are answered unknown with a reason so the policy escalates, and a
// model is never asked about them: the seed library's hybrid classifier
// overturned exactly these (a correct unknown) into confident wrong types.
// The set below widens the first rules of textrules.go (auth, content
// filter, session, billing) to more families of phrasings.
//
// Every check here runs after the typed ones — the rules are appended to
// the end of textRules, the exception-name families and HTTP statuses are
// weak hints that apply only when no code or text rule decided — so they
// never change a typed answer: they only give a reason to an unknown.

// Reasons added by this file.
const (
	ReasonDeprecated     = "deprecated"      // the model, API or endpoint was retired
	ReasonCompliance     = "compliance"      // region, terms of use, policy violation
	ReasonConfiguration  = "configuration"   // misconfigured client: settings, certificates, modules
	ReasonNotImplemented = "not_implemented" // the operation is not supported by the target
	ReasonProgramError   = "program_error"   // a bug in the agent's or tool's code
	ReasonResources      = "resources"       // the host ran out of memory, disk, file handles
	ReasonCancelled      = "cancelled"       // a user or operator stopped the run
)

// NotRetryable reports whether reason names a failure that is clear but
// not retryable (every reason except those that only say a run did not
// finish or that the spans cannot tell why).
func NotRetryable(reason string) bool {
	return reason != "" && reason != ReasonNoFinalAnswer && reason != ReasonRootLost && reason != ReasonCallsUnrecorded
}

// notRetryableRules are appended after every typed text rule.
var notRetryableRules = []textRule{
	{
		name: "account_disabled", typ: Unknown, reason: ReasonAuth, conf: confTextRule,
		keys: []string{"suspended", "deactivated", "disabled", "banned", "blocked", "locked", "terminated", "revoked", "inactive"},
		re:   rx(`(?i)\b(?:account|organi[sz]ation|org|project|subscription|workspace|tenant|api key|key)\b[^\n]{0,40}?\b(?:suspended|deactivated|disabled|banned|blocked|locked|terminated|revoked|inactive)\b`),
	},
	{
		name: "auth_more", typ: Unknown, reason: ReasonAuth, conf: confTextRule,
		keys: []string{"api key", "api_key", "apikey", "api-key", "signature", "clienttoken", "security token", "unrecognizedclient", "grant", "client", "not authori", "not allowed", "not permitted", "access", "login", "log in", "logged in", "sign in", "authenticate"},
		re:   rx(`(?i)\bapi[ _-]?key (?:is )?not (?:valid|found|provided|set)\b|\bno api[ _-]?key\b|\bsignature ?does ?not ?match\b|\binvalidclienttokenid\b|\bsecurity token [^\n]{0,40}\binvalid\b|\bunrecognizedclient|\binvalid[ _](?:grant|client)\b|\bnot (?:authori[sz]ed|allowed|permitted) to (?:access|perform|use|call|invoke|read|write)\b|\baccess (?:to [^\n]{0,40} )?(?:is )?(?:not allowed|restricted|revoked)\b|\blogin required\b|\bnot logged in\b|\b(?:re-?authenticate|log ?in again|sign ?in again)\b`),
	},
	{
		name: "session_more", typ: Unknown, reason: ReasonSessionExpired, conf: confTextRule,
		keys: []string{"session", "token", "conversation", "thread"},
		re:   rx(`(?i)\b(?:invalid|unknown|expired|closed|stale|no valid) session\b|\bsession (?:id )?[^\n]{0,40}?\b(?:does not exist|is unknown|is closed|was closed|has been closed|has ended)\b|\bexpired (?:refresh |access |auth |bearer )?token\b|\bexpiredtoken|\b(?:access|auth|refresh|bearer|security) token (?:is |has been )?(?:revoked|no longer valid)\b|\b(?:conversation|thread) (?:has )?(?:expired|was deleted|no longer exists)\b|\bno (?:conversation|thread) found\b`),
	},
	{
		name: "billing_more", typ: Unknown, reason: ReasonBilling, conf: confTextRule,
		keys: []string{"budget", "spend", "usage limit", "credit", "monthly limit", "plan limit", "free tier", "trial", "upgrade", "payment"},
		re:   rx(`(?i)\b(?:budget|spend(?:ing)? (?:limit|cap)|usage limit|credit limit|monthly limit|plan limit|free tier|trial)\b[^\n]{0,40}?\b(?:exceeded|reached|exhausted|expired|used up|hit)\b|\b(?:exceeded|reached|hit) (?:your |the )?(?:budget|spend(?:ing)? limit|usage limit|credit limit|monthly limit|plan limit|free tier)\b|\b(?:out of|no remaining|not enough) credits?\b|\bupgrade (?:your|to a) (?:plan|paid|account|tier|subscription)\b|\bpayment (?:failed|overdue|declined)\b`),
	},
	{
		name: "content_filter_more", typ: Unknown, reason: ReasonContentFilter, conf: confTextRule,
		keys: []string{"guardrail", "blocked", "flagged", "unsafe", "harmful", "disallowed", "inappropriate", "jailbreak", "injection", "shield", "harm", "pii", "refus"},
		re:   rx(`(?i)\bguardrails?\b[^\n]{0,40}?\b(?:intervened|blocked|triggered|violation|tripped)|\b(?:input|output|prompt|response|request|message) (?:was |has been )?(?:blocked|flagged) (?:by|due to|because|for)\b|\b(?:unsafe|harmful|disallowed|inappropriate) (?:content|prompt|request|input|output)\b|\bjailbreak|\bprompt injection\b|\bprompt shield|\bharm[ _]categor|\bpii (?:detected|found)\b|\brefus(?:ed|es) to (?:answer|respond|comply|generate|help)\b`),
	},
	{
		name: "deprecated", typ: Unknown, reason: ReasonDeprecated, conf: confTextRule,
		keys: []string{"deprecat", "decommission", "retired", "discontinued", "sunset", "no longer", "end of life", "end-of-life"},
		re:   rx(`(?i)\b(?:has|have) been (?:deprecated|decommissioned|retired|discontinued|sunset)\b|\b(?:is|was|are|were) (?:now )?(?:deprecated|decommissioned|retired|discontinued)\b|\bmodel[_ ](?:decommissioned|deprecated|retired)\b|\bno longer (?:supported|offered|maintained|served)\b|\bend[ -]of[ -]life\b|\bdeprecated (?:model|api|endpoint|version)\b`),
	},
	{
		name: "compliance", typ: Unknown, reason: ReasonCompliance, conf: confTextRule,
		keys: []string{"country", "region", "territory", "location", "jurisdiction", "residency", "export", "sanction", "violat", "terms of", "acceptable use", "compliance", "legal", "geo"},
		re:   rx(`(?i)\bnot (?:available|supported|allowed|permitted) in your (?:country|region|territory|location|jurisdiction)\b|\bunsupported[_ ](?:country|region|location)|\b(?:country|region|territory)(?:,? (?:region|territory))*,? (?:or territory )?(?:is )?not supported\b|\bdata residency\b|\bexport[ -]control|\bsanction(?:s|ed)\b[^\n]{0,40}\b(?:region|country|entity|list)\b|\bviolat(?:es|ed|ing|ion of) (?:our |the )?(?:usage |acceptable use |use case )?(?:polic(?:y|ies)|terms|guidelines)\b|\bterms of (?:service|use)\b|\bacceptable use polic|\bcompliance (?:policy|check|violation|requirements?)\b|\blegal (?:hold|restrictions?|reasons)\b|\bgeo-?(?:blocked|restricted|fenced)\b`),
	},
	{
		name: "cancelled", typ: Unknown, reason: ReasonCancelled, conf: confTextRule,
		keys: []string{"cancel", "abort", "stopped", "terminated", "interrupt"},
		re:   rx(`(?i)\b(?:cancel(?:l)?ed|aborted|stopped|terminated|interrupted) by (?:the )?(?:user|operator|human|administrator|admin)\b|\b(?:user|operator|human) (?:cancel(?:l)?ed|aborted|stopped|interrupted)\b|\bkeyboard ?interrupt\b`),
	},
	{
		name: "human_in_the_loop", typ: Unknown, reason: ReasonHumanInLoop, conf: confTextRule,
		keys: []string{"interrupt", "approval", "confirmation", "review", "input", "intervention", "loop", "denied", "rejected", "declined", "refused", "approve"},
		re:   rx(`(?i)\binterrupted at\b|\b(?:graph|node) ?interrupt\b|\binterrupt\(\)|\b(?:human|user|manual|operator)[ -](?:approval|confirmation|review|input|intervention|in[ -]the[ -]loop)\b|\bapproval (?:was |is )?(?:denied|rejected|declined|required|pending|timed out)\b|\b(?:user|human|operator|reviewer) (?:denied|rejected|declined|refused|did not approve)\b|\bawaiting (?:human|user|manual|operator) (?:input|approval|confirmation|review)\b|\brequires? (?:human|user|manual|operator) (?:approval|confirmation|review|input)\b`),
	},
	{
		name: "configuration", typ: Unknown, reason: ReasonConfiguration, conf: confTextRule,
		keys: []string{"configur", "config", "setting", "environment variable", "env var", "certificate", "module", "circular", "cycle"},
		re:   rx(`(?i)\bmisconfigur|\b(?:not|isn't|is not) (?:properly |correctly )?configured\b|\bno [\w-]+ (?:is )?configured\b|\binvalid (?:configuration|config|settings)\b|\bconfiguration (?:error|is invalid|missing)\b|\bmissing (?:required )?(?:environment variable|env var|configuration|config|setting)s?\b|\benvironment variable [^\n]{0,60}?\b(?:not set|missing|required|undefined)\b|\bcertificate verify failed\b|\bself[- ]signed certificate\b|\bunable to (?:get|verify) (?:local )?(?:issuer )?certificate\b|\bno module named\b|\bcannot find module\b|\bmodule not found\b|\bcircular dependency\b|\bcycle detected\b`),
	},
	{
		name: "not_implemented", typ: Unknown, reason: ReasonNotImplemented, conf: confTextRule,
		keys: []string{"implemented", "not allowed", "not supported", "support"},
		re:   rx(`(?i)\bnot (?:yet )?implemented\b|\bunimplemented\b|\bnotimplemented|\bmethod not allowed\b|\boperation (?:is )?not supported\b|\bnot supported by (?:this|the) (?:model|provider|server|endpoint|api)\b|\b(?:does not|doesn't) support (?:tools|tool use|tool calling|function calling|functions)\b`),
	},
	{
		name: "program_error", typ: Unknown, reason: ReasonProgramError, conf: confTextRule,
		keys: []string{"attribute", "callable", "subscriptable", "iterable", "not defined", "cannot read propert", "not a function", "undefined is not", "null pointer", "nullpointer", "nil pointer", "out of range", "by zero", "segmentation", "assertion"},
		re:   rx(`(?i)\bhas no attribute\b|\bobject is not (?:callable|subscriptable|iterable)\b|\b(?:name|variable) ['"\x60]?[\w.]+['"\x60]? is not defined\b|\bcannot read propert(?:y|ies) of (?:undefined|null)\b|\bis not a function\b|\bundefined is not an object\b|\bnull ?pointer|\bnil pointer dereference\b|\bindex out of range\b|\b(?:division|divide) by zero\b|\bsegmentation fault\b|\bassertion (?:failed|error)\b`),
	},
	{
		name: "resources", typ: Unknown, reason: ReasonResources, conf: confTextRule,
		keys: []string{"memory", "oom", "space left", "disk", "open files"},
		re:   rx(`(?i)\bout of memory\b|\boom[ -]?kill|\bcannot allocate memory\b|\bno space left on device\b|\bdisk (?:is )?full\b|\btoo many open files\b|\bmemory limit exceeded\b`),
	},
}

// lateReasonRules names the rules above: a tool result that merely opens
// like a failure ("Failed logins: 3, account locked") is not read as one
// on their word alone.
var lateReasonRules = func() map[string]bool {
	m := make(map[string]bool, len(notRetryableRules))
	for _, r := range notRetryableRules {
		m[r.name] = true
	}
	return m
}()

// excNotRetryableHints are exception-name families that say a failure is
// not retryable. They are weak: a code or a text rule that classifies the
// message decides first ("TypeError: fetch failed" is read by its text).
var excNotRetryableHints = []struct {
	fam    nameFamily
	reason string
}{
	{nameFamily{contains: []string{"keyboardinterrupt", "usercancel", "cancelledbyuser", "canceledbyuser", "operatorcancel"}}, ReasonCancelled},
	{nameFamily{contains: []string{"interrupt", "approvalrequired", "humaninput", "userrejected", "userdenied", "toolcallrejected", "toolapproval"}}, ReasonHumanInLoop},
	{nameFamily{contains: []string{"deprecat", "decommission", "modelretired"}, suffixes: []string{"gone", "goneerror", "goneexception"}}, ReasonDeprecated},
	{nameFamily{contains: []string{"notimplemented", "unimplemented", "unsupportedoperation", "operationnotsupported"}}, ReasonNotImplemented},
	{nameFamily{contains: []string{"configerror", "configurationerror", "configexception", "configurationexception", "misconfigur", "importerror", "modulenotfound", "missingenv", "sslerror", "certificateerror", "certificateverif", "sslcertverification"}}, ReasonConfiguration},
	{nameFamily{exact: []string{"attributeerror", "nameerror", "zerodivisionerror", "assertionerror", "indexerror", "unboundlocalerror", "referenceerror", "nullpointerexception", "nullreferenceexception", "arithmeticexception"}}, ReasonProgramError},
	{nameFamily{contains: []string{"memoryerror", "outofmemory", "oomkill", "diskfull", "nospaceleft"}}, ReasonResources},
	{nameFamily{contains: []string{"compliance", "policyviolation", "regionnotsupported", "unsupportedregion", "unsupportedcountry", "geoblock"}}, ReasonCompliance},
	{nameFamily{contains: []string{"accountsuspended", "accountdisabled", "accountdeactivated", "accountlocked", "accountbanned"}}, ReasonAuth},
	{nameFamily{contains: []string{"expiredtoken", "invalidsession", "sessionclosed", "sessionterminated"}}, ReasonSessionExpired},
	{nameFamily{contains: []string{"budgetexceeded", "outofcredit", "insufficientcredit", "insufficientbalance", "creditlimit"}}, ReasonBilling},
}

// notRetryableName returns the reason of an exception name (lower-cased,
// separators removed; keys its nameKeys groups) that says the failure is
// not retryable.
func notRetryableName(n string, keys *keyHits) (string, bool) {
	for _, h := range excNotRetryableHints {
		if h.fam.match(n, keys) {
			return h.reason, true
		}
	}
	return "", false
}

// notRetryableStatus reads the HTTP statuses that say a request can never
// succeed as sent: 410 (the target was retired), 501 (not implemented),
// 505 (HTTP version not supported).
func notRetryableStatus(code int) (finding, bool) {
	switch code {
	case 410:
		return finding{Type: Unknown, Reason: ReasonDeprecated}, true
	case 501, 505:
		return finding{Type: Unknown, Reason: ReasonNotImplemented}, true
	}
	return finding{}, false
}

// notRetryableNormCode reads provider error codes of the same families,
// normalized by normCode.
func notRetryableNormCode(c string) (finding, bool) {
	switch c {
	case "model_decommissioned", "model_deprecated", "model_retired", "deprecated_model":
		return finding{Type: Unknown, Reason: ReasonDeprecated}, true
	case "unsupported_country_region_territory", "unsupported_country", "unsupported_region", "region_not_supported":
		return finding{Type: Unknown, Reason: ReasonCompliance}, true
	case "account_deactivated", "account_suspended", "organization_deactivated", "account_disabled":
		return finding{Type: Unknown, Reason: ReasonAuth}, true
	case "budget_exceeded", "insufficient_credits", "insufficient_balance":
		return finding{Type: Unknown, Reason: ReasonBilling}, true
	case "not_implemented", "unimplemented":
		return finding{Type: Unknown, Reason: ReasonNotImplemented}, true
	}
	return finding{}, false
}
