package recoverystreamexporter // import "github.com/triage-otel/triage/exporter/recoverystreamexporter"

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/triage-otel/triage/exporter/internal/decisionrecord"
	"github.com/triage-otel/triage/exporter/recoverystreamexporter/internal/metadata"
)

// Stream entry field names: the contract with consumers.
const (
	FieldDecisionID  = "decision_id"
	FieldDecision    = "decision"
	FieldFailureType = "failure_type"
	FieldAction      = "action"
)

type streamExporter struct {
	cfg       *Config
	logger    *zap.Logger
	telemetry *metadata.TelemetryBuilder
	client    *redis.Client
}

func newStreamExporter(cfg *Config, set exporter.Settings) (*streamExporter, error) {
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	return &streamExporter{cfg: cfg, logger: set.Logger, telemetry: tb}, nil
}

func (e *streamExporter) start(ctx context.Context, _ component.Host) error {
	tlsCfg, err := e.cfg.TLS.LoadTLSConfig(ctx)
	if err != nil {
		return fmt.Errorf("tls: %w", err)
	}
	// The client connects lazily: a Redis that is down at startup is a
	// delivery failure to retry, not a reason to fail the collector.
	e.client = redis.NewClient(&redis.Options{
		Addr:         e.cfg.Endpoint,
		Username:     e.cfg.Username,
		Password:     string(e.cfg.Password),
		DB:           e.cfg.DB,
		TLSConfig:    tlsCfg,
		DialTimeout:  e.cfg.Timeout,
		ReadTimeout:  e.cfg.Timeout,
		WriteTimeout: e.cfg.Timeout,
		// go-redis would otherwise resend XADD by itself on network errors,
		// uncounted and outside the retry policy; exporterhelper retries.
		MaxRetries: -1,
		// CLIENT SETINFO is unknown before Redis 7.2.
		DisableIdentity: true,
	})
	return nil
}

func (e *streamExporter) shutdown(context.Context) error {
	var err error
	if e.client != nil {
		err = e.client.Close()
	}
	e.telemetry.Shutdown()
	return err
}

func (e *streamExporter) pushLogs(ctx context.Context, ld plog.Logs) error {
	return decisionrecord.Deliver(ld,
		func(d decisionrecord.Decision) error { return e.append(ctx, d) },
		func(d decisionrecord.Decision, err error) { e.dropped(ctx, d, err) },
	)
}

// append XADDs one decision. It returns nil when Redis acknowledged it, a
// permanent error when Redis refuses the command for good, and a plain
// (retryable) error otherwise.
func (e *streamExporter) append(ctx context.Context, d decisionrecord.Decision) error {
	if e.client == nil {
		return errors.New("exporter not started")
	}
	args := &redis.XAddArgs{
		Stream: e.cfg.Stream,
		ID:     "*",
		Values: []any{
			FieldDecisionID, d.ID,
			FieldDecision, string(d.JSON),
			FieldFailureType, d.FailureType,
			FieldAction, d.ActionKind,
		},
	}
	if e.cfg.MaxLen > 0 {
		args.MaxLen = e.cfg.MaxLen
		args.Approx = true
	}
	id, err := e.client.XAdd(ctx, args).Result()
	if err == nil {
		e.telemetry.RecoveryStreamDecisionsAppended.Add(ctx, 1)
		e.logger.Debug("decision appended", zap.String("decision_id", d.ID), zap.String("entry_id", id))
		return nil
	}
	if reason, retry := classify(err); retry {
		e.telemetry.RecoveryStreamAppendFailures.Add(ctx, 1, metric.WithAttributes(attribute.String("reason", reason)))
		return fmt.Errorf("XADD decision %s: %w", d.ID, err)
	}
	return consumererror.NewPermanent(fmt.Errorf("redis refused XADD of decision %s: %w", d.ID, err))
}

// classify tells whether an XADD error may succeed later, and why it failed.
func classify(err error) (reason string, retry bool) {
	var redisErr redis.Error
	if !errors.As(err, &redisErr) {
		// Not a server reply: connection refused or reset, timeout, pool
		// exhausted, client closed during shutdown.
		var nerr net.Error
		if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &nerr) && nerr.Timeout()) {
			return "timeout", true
		}
		return "connection", true
	}
	switch {
	case redis.IsAuthError(err), redis.IsPermissionError(err):
		// A password or ACL fixed by the operator lets the queued decisions
		// through; dropping them would lose them.
		return "redis_auth", true
	case redis.IsLoadingError(err), redis.IsReadOnlyError(err), redis.IsClusterDownError(err),
		redis.IsTryAgainError(err), redis.IsMasterDownError(err), redis.IsMaxClientsError(err),
		redis.IsOOMError(err), redis.HasErrorPrefix(err, "BUSY"):
		return "redis_unavailable", true
	default:
		// WRONGTYPE (the key is not a stream), syntax errors: the same
		// command fails the same way every time.
		return "rejected", false
	}
}

func (e *streamExporter) dropped(ctx context.Context, d decisionrecord.Decision, err error) {
	reason := "rejected"
	if errors.Is(err, decisionrecord.ErrInvalidBody) {
		reason = "invalid"
	}
	e.telemetry.RecoveryStreamDecisionsDropped.Add(ctx, 1, metric.WithAttributes(attribute.String("reason", reason)))
	e.logger.Warn("decision dropped without retry",
		zap.String("decision_id", d.ID), zap.String("reason", reason), zap.Error(err))
}
