package recoverywebhookexporter

import (
	"context"
	"encoding/base64"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A receiver that refuses the signature (401: the secrets differ) keeps
// the decision queued: retried with back-off, delivered once the receiver
// has the right secret, never dropped; the log says why.
func TestUnauthorizedKeepsTheDecisionQueued(t *testing.T) {
	rcv := newReceiver(t, "whsec_"+base64.StdEncoding.EncodeToString([]byte("the-receiver-has-another-secret")), nil)
	rcv.start()
	h := startExporter(t, testConfig(rcv.server.URL, testSecret))
	require.NoError(t, h.exp.ConsumeLogs(context.Background(), decisionLogs("dec-auth")))

	// The receiver counts a refusal before the exporter has read the
	// answer: wait on the exporter's own count.
	require.Eventually(t, func() bool {
		return h.counter(t, "recovery_webhook_delivery_failures", map[string]string{"reason": "http_401"}) >= 3
	}, 10*time.Second, 5*time.Millisecond, "retried while refused")
	assert.Zero(t, h.counter(t, "recovery_webhook_decisions_dropped", nil))
	warnings := h.logs.FilterMessageSnippet("secrets probably differ")
	require.Equal(t, 1, warnings.Len(), "one warning per interval, not one per attempt")
	assert.Equal(t, "dec-auth", warnings.All()[0].ContextMap()["decision_id"])

	// The receiver is given the collector's secret: the queued decision
	// goes through, once.
	rcv.mu.Lock()
	rcv.key = decodeWhsec(t, testSecret)
	rcv.mu.Unlock()
	require.Eventually(t, func() bool {
		_, delivered, _ := rcv.snapshot()
		return delivered["dec-auth"] == 1
	}, 10*time.Second, 5*time.Millisecond)
	h.shutdown(t)
	_, delivered, _ := rcv.snapshot()
	assert.Equal(t, 1, delivered["dec-auth"])
	assert.Zero(t, h.counter(t, "recovery_webhook_decisions_dropped", nil))
}

func TestForbiddenIsRetriedToo(t *testing.T) {
	rcv := newReceiver(t, testSecret, func(_ string, n int) (int, http.Header) {
		if n <= 2 {
			return http.StatusForbidden, nil
		}
		return http.StatusOK, nil
	})
	rcv.start()
	h := startExporter(t, testConfig(rcv.server.URL, testSecret))
	require.NoError(t, h.exp.ConsumeLogs(context.Background(), decisionLogs("dec-403")))
	require.Eventually(t, func() bool {
		_, delivered, _ := rcv.snapshot()
		return delivered["dec-403"] == 1
	}, 10*time.Second, 5*time.Millisecond)
	h.shutdown(t)
	assert.Equal(t, int64(2), h.counter(t, "recovery_webhook_delivery_failures", map[string]string{"reason": "http_403"}))
	assert.Zero(t, h.counter(t, "recovery_webhook_decisions_dropped", nil))
}
