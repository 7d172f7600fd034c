package ratelog

import (
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func TestOncePerIntervalWithTheCount(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	logger := zap.New(core)
	w := New("queue full", 50*time.Millisecond)
	for range 5 {
		w.Log(logger, 2)
	}
	if logs.Len() != 1 || logs.All()[0].ContextMap()["count"] != int64(2) {
		t.Fatalf("first burst: %v", logs.All())
	}
	time.Sleep(60 * time.Millisecond)
	w.Log(logger, 1)
	if logs.Len() != 2 || logs.All()[1].ContextMap()["count"] != int64(9) {
		t.Fatalf("after the interval: %v", logs.All())
	}
}
