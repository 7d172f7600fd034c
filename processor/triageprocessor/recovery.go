package triageprocessor // import "github.com/triage-otel/triage/processor/triageprocessor"

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/triage-otel/triage/classifier"
	"github.com/triage-otel/triage/processor/triageprocessor/internal/metadata"
	"github.com/triage-otel/triage/recovery"
	"github.com/triage-otel/triage/trajectory"
	"github.com/triage-otel/triage/wire"
)

// Attribute names of the run identity (every run root) and of the recovery
// decision (failed runs), as the triage connector reads them (defined in
// package wire).
const (
	attrAgent         = wire.AttrAgent
	attrService       = wire.AttrService
	attrTool          = wire.AttrTool
	attrDecision      = wire.AttrDecision
	attrDecisionID    = wire.AttrDecisionID
	attrActionKind    = wire.AttrActionKind
	attrActionDelayMS = wire.AttrActionDelayMS
	attrActionHint    = wire.AttrActionHint
	attrActionTarget  = wire.AttrActionTarget
	attrAttempt       = wire.AttrAttempt
	attrMaxAttempts   = wire.AttrMaxAttempts
	attrPolicy        = wire.AttrPolicy
	attrSessionID     = wire.AttrSessionID
	// attrInFlightDecisionID on a run root: the in-flight decision its
	// final decision references.
	attrInFlightDecisionID = wire.AttrInFlightDecisionID
	attrPhase              = wire.AttrPhase
)

// recoverer asks the recovery engine for a decision per failed run and
// reports successful runs to it.
type recoverer struct {
	engine       *recovery.Engine
	out          outbound
	sessionAttrs []string
	// sessionKeys is the Build option reading sessionAttrs, made once.
	sessionKeys trajectory.Option
	timeout     time.Duration
	tb          *metadata.TelemetryBuilder
	logger      *zap.Logger
	redis       string

	closeOnce sync.Once
	closeErr  error
}

func newRecoverer(cfg *RecoveryConfig, red *recovery.Redactor, tb *metadata.TelemetryBuilder, logger *zap.Logger) (*recoverer, error) {
	r := &recoverer{
		out:          outbound{red: red},
		sessionAttrs: slices.Clone(cfg.SessionAttributes),
		timeout:      cfg.Timeout,
		tb:           tb,
		logger:       logger,
		redis:        cfg.History.Redis.Endpoint,
	}
	r.sessionKeys = trajectory.WithSessionKeys(r.sessionAttrs...)
	eng, err := recovery.New(cfg.engineOptions(), recovery.WithRedactor(red), recovery.WithOnDegraded(r.onDegraded))
	if err != nil {
		return nil, fmt.Errorf("recovery: %w", err)
	}
	r.engine = eng
	err = tb.RegisterProcessorTriageRecoveryHistoryEvictedCallback(func(_ context.Context, o metric.Int64Observer) error {
		st := eng.Stats()
		o.Observe(st.SessionsEvicted, metric.WithAttributes(attribute.String("history", "session")))
		o.Observe(st.BreakersEvicted, metric.WithAttributes(attribute.String("history", "breaker")))
		return nil
	})
	if err != nil {
		_ = eng.Close()
		return nil, err
	}
	return r, nil
}

// onDegraded counts history calls served from memory. err is set only on
// the call where Redis failed; the calls after it, while Redis is left
// alone for recheck_interval, come with nil, so this logs at most once per
// interval.
func (r *recoverer) onDegraded(op string, err error) {
	r.tb.ProcessorTriageRecoveryDegraded.Add(context.Background(), 1, adds1("operation", op)...)
	if err != nil {
		r.logger.Warn("recovery history: Redis failed, serving from memory (history is local to this collector until Redis answers again)",
			zap.String("endpoint", r.redis), zap.String("operation", op), r.out.err(err))
	}
}

func (r *recoverer) close() error {
	r.closeOnce.Do(func() { r.closeErr = r.engine.Close() })
	return r.closeErr
}

// callContext bounds one engine call. The caller's cancellation is not
// inherited: the spans are forwarded whatever happens, and a decision
// abandoned half-way would still have consumed an attempt.
// Only the Redis history waits on anything, and only it reads the
// context's cancellation (the engine's failover store): without it (every
// strategy configurable here decides in memory) there is nothing to bound
// and nothing that could see a cancellation, so the context goes as it is,
// with no timer and no wrapper made per decision.
func (r *recoverer) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if r.redis == "" {
		return ctx, noCancel
	}
	return context.WithTimeout(context.WithoutCancel(ctx), r.timeout)
}

func noCancel() {}

// appendDecide appends the decision annotations of one failed run to anns;
// none when the engine could not decide (counted and logged).
func (r *recoverer) appendDecide(ctx context.Context, anns []annotation, in recovery.Input, run *trajectory.Run) []annotation {
	in.SessionID = r.session(run)
	in.Service, in.Agent = run.Service, run.Agent // the engine redacts them for the document
	d, anns, ok := r.appendDecision(ctx, anns, in)
	if ok {
		r.tb.ProcessorTriageRecoveryDecisions.Add(ctx, 1, adds1("action", string(d.Action.Kind))...)
	}
	return anns
}

// decisionAnnotations is the most annotations decideInput writes, and
// room for the two an in-flight decision adds.
const decisionAnnotations = 14

// decideInput asks the engine for a decision and returns it with its
// annotations; ok false when the engine could not decide (counted and
// logged).
func (r *recoverer) decideInput(ctx context.Context, in recovery.Input) (d recovery.Decision, anns []annotation, ok bool) {
	return r.appendDecision(ctx, make([]annotation, 0, decisionAnnotations), in)
}

// appendDecision is decideInput appending the annotations to anns (which
// it returns unchanged when the engine could not decide).
func (r *recoverer) appendDecision(ctx context.Context, anns []annotation, in recovery.Input) (recovery.Decision, []annotation, bool) {
	cctx, cancel := r.callContext(ctx)
	d, err := r.engine.Decide(cctx, in)
	cancel()
	if err != nil {
		r.tb.ProcessorTriageRecoveryErrors.Add(ctx, 1, adds1("operation", "decide")...)
		r.logger.Warn("no recovery decision", zap.String("phase", in.Phase), zap.Stringer("trace_id", in.TraceID), zap.Stringer("span_id", in.SpanID), r.out.err(err))
		return d, anns, false
	}
	// The engine (with this processor's redactor) owns the document's
	// guarantee: every text field of d has passed the redactor once.
	raw, err := d.JSON()
	if err != nil {
		r.tb.ProcessorTriageRecoveryErrors.Add(ctx, 1, adds1("operation", "decide")...)
		r.logger.Warn("encoding a recovery decision", zap.Stringer("trace_id", in.TraceID), r.out.err(err))
		return d, anns, false
	}
	// raw is this call's own buffer and is never written again: the
	// attribute shares its bytes instead of copying the document.
	doc := unsafe.String(unsafe.SliceData(raw), len(raw))
	anns = append(anns,
		strAnn(attrDecision, doc),
		strAnn(attrDecisionID, d.DecisionID),
		strAnn(attrActionKind, string(d.Action.Kind)),
		intAnn(attrActionDelayMS, d.Action.DelayMS),
		intAnn(attrAttempt, int64(d.Attempt)),
		intAnn(attrMaxAttempts, int64(d.MaxAttempts)),
		strAnn(attrPolicy, d.Policy),
		strAnn(attrSessionID, d.SessionID),
		strAnn(attrPhase, d.Phase),
	)
	if d.Action.Hint != "" {
		anns = append(anns, strAnn(attrActionHint, d.Action.Hint))
	}
	if d.Action.Target != "" {
		anns = append(anns, strAnn(attrActionTarget, d.Action.Target))
	}
	if d.InFlightDecisionID != "" {
		anns = append(anns, strAnn(attrInFlightDecisionID, d.InFlightDecisionID))
	}
	return d, anns, true
}

// recordSuccess tells the engine a run ended well: half-open breakers in
// its scope close and, with reset_on_success, its session's budgets reset.
func (r *recoverer) recordSuccess(ctx context.Context, run *trajectory.Run) {
	var tools []string
	if r.engine.ReadsSuccessTools() {
		for i := range run.Steps {
			if t := run.Steps[i].ToolName; t != "" && !slices.Contains(tools, t) {
				tools = append(tools, t)
			}
		}
	}
	cctx, cancel := r.callContext(ctx)
	err := r.engine.RecordSuccess(cctx, recovery.SuccessInput{
		SessionID: r.session(run),
		Service:   run.Service,
		Agent:     run.Agent,
		Tools:     tools,
	})
	cancel()
	if err != nil {
		r.tb.ProcessorTriageRecoveryErrors.Add(ctx, 1, adds1("operation", "record_success")...)
		r.logger.Debug("recording a successful run", zap.String("trace_id", run.TraceID.String()), r.out.err(err))
	}
}

// session returns the run's session id: the first configured attribute
// found on the run's root span, then on its other spans, then on the
// resource (trajectory.WithSessionKeys, read by Build); else the session the
// trajectory builder recognised by convention (e.g. LangChain metadata);
// else "" (the engine then uses the trace).
func (r *recoverer) session(run *trajectory.Run) string {
	if run.SessionKey != "" {
		return run.SessionKey
	}
	return run.Session
}

// appendRunAnnotations appends the identity and recovery annotations of one run's
// root: triage.agent on every run, triage.tool and the decision on failed
// runs. Successful runs are reported to the engine and get no decision.
func (p *triageProcessor) appendRunAnnotations(ctx context.Context, anns []annotation, traceID pcommon.TraceID, run *trajectory.Run, v *classifier.Verdict, inFlight []recovery.Decision) []annotation {
	anns = p.appendIdentityAnnotations(anns, run)
	if v.Outcome != classifier.OutcomeFailed {
		if p.recovery != nil {
			p.recovery.recordSuccess(ctx, run)
		}
		return anns
	}
	in := recovery.InputFromVerdict(v, traceID, decisionSpanID(run, v))
	if in.Tool != "" {
		anns = append(anns, strAnn(attrTool, p.out.text(in.Tool)))
	}
	if why, ok := run.ToolHints(in.Tool).NonIdempotent(); ok {
		in.NonIdempotent = why
	}
	in.InFlight = inFlightOfRun(run, in.FailureType, inFlight)
	if p.recovery != nil {
		anns = p.recovery.appendDecide(ctx, anns, in, run)
	}
	return anns
}

// decisionSpanID is the span a decision refers to: the run's root (also
// when it never arrived, so a late root matches), else the evidence, else
// the run's first span.
func decisionSpanID(run *trajectory.Run, v *classifier.Verdict) pcommon.SpanID {
	switch {
	case !run.RootSpanID.IsEmpty():
		return run.RootSpanID
	case !v.EvidenceSpanID.IsEmpty():
		return v.EvidenceSpanID
	case len(run.SpanIDs) > 0:
		return run.SpanIDs[0]
	}
	return pcommon.SpanID{}
}
