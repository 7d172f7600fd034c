package recoverywebhookexporter

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.uber.org/zap"

	"github.com/triage-otel/triage/exporter/recoverywebhookexporter/internal/metadatatest"
)

// storageHost is a component.Host that offers one storage extension, as the
// collector does for `sending_queue: {storage: file_storage}`.
type storageHost struct {
	extensions map[component.ID]component.Component
}

func (h storageHost) GetExtensions() map[component.ID]component.Component { return h.extensions }

func startFileStorage(t *testing.T, dir string) (component.ID, component.Component) {
	t.Helper()
	factory := filestorage.NewFactory()
	cfg := factory.CreateDefaultConfig().(*filestorage.Config)
	cfg.Directory = dir
	require.NoError(t, cfg.Validate())
	ext, err := factory.Create(context.Background(), extensiontest.NewNopSettings(factory.Type()), cfg)
	require.NoError(t, err)
	require.NoError(t, ext.Start(context.Background(), componenttest.NewNopHost()))
	return component.NewID(factory.Type()), ext
}

// TestPersistentQueueSurvivesRestart: decisions accepted while the receiver
// refuses connections are still delivered, exactly once each, by a new
// exporter instance (a collector restart) reading the same file storage.
func TestPersistentQueueSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	newConfig := func(storageID component.ID) *Config {
		cfg := testConfig("http://"+addr+"/hook", testSecret)
		q := cfg.QueueConfig.Get()
		q.StorageID = &storageID
		cfg.QueueConfig = configoptional.Some(*q)
		return cfg
	}
	run := func(storageID component.ID, ext component.Component) *harness {
		cfg := newConfig(storageID)
		require.NoError(t, cfg.Validate())
		h := &harness{config: cfg}
		h.tt = componenttest.NewTelemetry()
		t.Cleanup(func() { _ = h.tt.Shutdown(context.Background()) })
		set := metadataSettings(h)
		set.Logger = zap.NewNop()
		h.exp, err = NewFactory().CreateLogs(context.Background(), set, cfg)
		require.NoError(t, err)
		host := storageHost{extensions: map[component.ID]component.Component{storageID: ext}}
		require.NoError(t, h.exp.Start(context.Background(), host))
		return h
	}

	// First life: the receiver is down.
	storageID, ext := startFileStorage(t, dir)
	first := run(storageID, ext)
	require.NoError(t, first.exp.ConsumeLogs(context.Background(), decisionLogs("dec-p1", "dec-p2")))
	require.NoError(t, first.exp.ConsumeLogs(context.Background(), decisionLogs("dec-p3")))
	require.Eventually(t, func() bool {
		return first.counter(t, "recovery_webhook_delivery_failures", map[string]string{"reason": "connection"}) >= 2
	}, 10*time.Second, 10*time.Millisecond)
	first.shutdown(t)
	require.NoError(t, ext.Shutdown(context.Background()))
	assert.Zero(t, first.counter(t, "recovery_webhook_decisions_delivered", nil))

	// The receiver comes back; second life on the same storage directory.
	rcv := newReceiver(t, testSecret, nil)
	ln, err = net.Listen("tcp", addr)
	require.NoError(t, err)
	rcv.server.Listener = ln
	rcv.start()

	storageID, ext = startFileStorage(t, dir)
	second := run(storageID, ext)
	require.Eventually(t, func() bool {
		_, delivered, _ := rcv.snapshot()
		return len(delivered) == 3
	}, 20*time.Second, 10*time.Millisecond)
	second.shutdown(t)
	require.NoError(t, ext.Shutdown(context.Background()))

	_, delivered, bad := rcv.snapshot()
	assert.Equal(t, map[string]int{"dec-p1": 1, "dec-p2": 1, "dec-p3": 1}, delivered)
	assert.Zero(t, bad)
}

func metadataSettings(h *harness) exporter.Settings { return metadatatest.NewSettings(h.tt) }
