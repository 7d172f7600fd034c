package recoverywebhookexporter // import "github.com/triage-otel/triage/exporter/recoverywebhookexporter"

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/triage-otel/triage/exporter/internal/decisionrecord"
	"github.com/triage-otel/triage/exporter/recoverywebhookexporter/internal/metadata"
	"github.com/triage-otel/triage/internal/ratelog"
)

const (
	headerID        = "webhook-id"
	headerTimestamp = "webhook-timestamp"
	headerSignature = "webhook-signature"

	// maxRetryAfter bounds a receiver's Retry-After so that one bad header
	// cannot park a queue consumer for hours.
	maxRetryAfter = 10 * time.Minute
	// responseSnippet is how much of an error response goes into the error.
	responseSnippet = 256
	// responseDrain is how much of a response is read so the connection can
	// be reused; larger bodies just close the connection.
	responseDrain = 64 << 10
	maxRedirects  = 5
)

type webhookExporter struct {
	cfg       *Config
	key       []byte // nil: unsigned
	settings  component.TelemetrySettings
	logger    *zap.Logger
	telemetry *metadata.TelemetryBuilder
	client    *http.Client
	now       func() time.Time

	// authWarning says, at most every 30 s, that the receiver refuses
	// the requests as unauthorized: under a wrong secret every attempt of
	// every decision is refused.
	authWarning *ratelog.Warning
}

func newWebhookExporter(cfg *Config, set exporter.Settings) (*webhookExporter, error) {
	var key []byte
	if cfg.Secret != "" {
		k, err := signingKey(cfg.Secret)
		if err != nil {
			return nil, err
		}
		key = k
	}
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	return &webhookExporter{
		cfg:       cfg,
		key:       key,
		settings:  set.TelemetrySettings,
		logger:    set.Logger,
		telemetry: tb,
		now:       time.Now,
		authWarning: ratelog.New("the webhook receiver refused the request as unauthorized: the webhook secrets probably differ "+
			"(recovery_webhook.secret and the receiver's); decisions stay queued and are retried with back-off until it accepts them", 30*time.Second),
	}, nil
}

func (e *webhookExporter) start(ctx context.Context, host component.Host) error {
	client, err := e.cfg.ClientConfig.ToClient(ctx, host.GetExtensions(), e.settings)
	if err != nil {
		return err
	}
	// Go turns a POST into a GET on 301/302/303, which would deliver nothing
	// while looking successful; only method-preserving redirects are followed.
	client.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if req.Method != http.MethodPost {
			return http.ErrUseLastResponse
		}
		if len(via) >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		return nil
	}
	e.client = client
	return nil
}

func (e *webhookExporter) shutdown(context.Context) error {
	if e.client != nil {
		e.client.CloseIdleConnections()
	}
	e.telemetry.Shutdown()
	return nil
}

func (e *webhookExporter) pushLogs(ctx context.Context, ld plog.Logs) error {
	err := decisionrecord.Deliver(ld,
		func(d decisionrecord.Decision) error { return e.send(ctx, d) },
		func(d decisionrecord.Decision, err error) { e.dropped(ctx, d, err) },
	)
	if ra, ok := errors.AsType[*retryAfterError](err); ok && ra.delay > 0 {
		return exporterhelper.NewThrottleRetry(err, ra.delay)
	}
	return err
}

// send POSTs one decision. It returns nil on 2xx, a permanent error when the
// receiver rejected it, and a plain (retryable) error otherwise.
func (e *webhookExporter) send(ctx context.Context, d decisionrecord.Decision) error {
	if e.client == nil {
		return errors.New("exporter not started")
	}
	timestamp := strconv.FormatInt(e.now().Unix(), 10)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.cfg.ClientConfig.Endpoint, bytes.NewReader(d.JSON))
	if err != nil {
		return consumererror.NewPermanent(fmt.Errorf("build request: %w", err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(headerID, d.ID)
	req.Header.Set(headerTimestamp, timestamp)
	if e.key != nil {
		req.Header.Set(headerSignature, Sign(e.key, d.ID, timestamp, d.JSON))
	}

	resp, err := e.client.Do(req)
	if err != nil {
		// url.Error repeats the endpoint, whose query may hold a token.
		if uerr, ok := errors.AsType[*url.Error](err); ok {
			err = uerr.Err
		}
		e.transient(ctx, networkReason(err))
		return fmt.Errorf("deliver decision %s: %w", d.ID, err)
	}
	snippet := readSnippet(resp.Body)
	_ = resp.Body.Close()

	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		e.telemetry.RecoveryWebhookDecisionsDelivered.Add(ctx, 1)
		e.logger.Debug("decision delivered", zap.String("decision_id", d.ID), zap.Int("status", code))
		return nil
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		// The receiver refuses the signature (or the credentials): the
		// secrets probably differ between collector and receiver. That is
		// fixed by configuration, not by the request, so the decision
		// stays queued and is retried with back-off until it is.
		e.transient(ctx, "http_"+strconv.Itoa(code))
		e.authWarning.Log(e.logger, 1, zap.Int("status", code), zap.String("decision_id", d.ID))
		return fmt.Errorf("webhook answered %d for decision %s (secrets probably differ): %s", code, d.ID, snippet)
	case code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500:
		reason := "http_5xx"
		if code < 500 {
			reason = "http_" + strconv.Itoa(code)
		}
		e.transient(ctx, reason)
		statusErr := fmt.Errorf("webhook answered %d for decision %s: %s", code, d.ID, snippet)
		if delay, ok := retryAfter(resp.Header.Get("Retry-After"), e.now()); ok {
			return &retryAfterError{err: statusErr, delay: delay}
		}
		return statusErr
	default:
		// 4xx: the receiver will never accept this request as it is. 1xx/3xx:
		// an unfollowed redirect or an odd reply is a configuration problem
		// no retry fixes.
		return consumererror.NewPermanent(fmt.Errorf("webhook rejected decision %s with %d: %s", d.ID, code, snippet))
	}
}

func (e *webhookExporter) transient(ctx context.Context, reason string) {
	e.telemetry.RecoveryWebhookDeliveryFailures.Add(ctx, 1, metric.WithAttributes(attribute.String("reason", reason)))
}

func (e *webhookExporter) dropped(ctx context.Context, d decisionrecord.Decision, err error) {
	reason := "rejected"
	if errors.Is(err, decisionrecord.ErrInvalidBody) {
		reason = "invalid"
	}
	e.telemetry.RecoveryWebhookDecisionsDropped.Add(ctx, 1, metric.WithAttributes(attribute.String("reason", reason)))
	e.logger.Warn("decision dropped without retry",
		zap.String("decision_id", d.ID), zap.String("reason", reason), zap.Error(err))
}

// Sign returns the webhook-signature header value for one request: the
// Standard Webhooks "v1," scheme, HMAC-SHA256 over "id.timestamp.body".
func Sign(key []byte, id, timestamp string, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write([]byte(timestamp))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

type retryAfterError struct {
	err   error
	delay time.Duration
}

func (r *retryAfterError) Error() string { return r.err.Error() }
func (r *retryAfterError) Unwrap() error { return r.err }

// retryAfter parses a Retry-After header: delay-seconds or an HTTP date.
func retryAfter(header string, now time.Time) (time.Duration, bool) {
	header = strings.TrimSpace(header)
	if header == "" {
		return 0, false
	}
	var delay time.Duration
	if secs, err := strconv.ParseInt(header, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		delay = time.Duration(min(secs, int64(maxRetryAfter/time.Second))) * time.Second
	} else if at, err := http.ParseTime(header); err == nil {
		delay = at.Sub(now)
	} else {
		return 0, false
	}
	if delay <= 0 {
		return 0, false
	}
	return min(delay, maxRetryAfter), true
}

func networkReason(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "timeout"
	}
	if nerr, ok := errors.AsType[net.Error](err); ok && nerr.Timeout() {
		return "timeout"
	}
	return "connection"
}

func readSnippet(body io.Reader) string {
	buf, _ := io.ReadAll(io.LimitReader(body, responseSnippet))
	_, _ = io.Copy(io.Discard, io.LimitReader(body, responseDrain))
	return strings.ToValidUTF8(strings.TrimSpace(string(buf)), "?")
}
