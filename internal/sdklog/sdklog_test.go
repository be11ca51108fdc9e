package sdklog_test

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/toolgate/toolgate/internal/sdklog"
)

func TestForKeepsWarningsDropsInfo(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		level    slog.Level
		wantInfo bool
	}{
		{"operator at INFO", slog.LevelInfo, false},
		{"operator at WARN", slog.LevelWarn, false},
		{"operator at DEBUG", slog.LevelDebug, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			log := sdklog.For(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: tc.level})))
			log.With("k", "v").WithGroup("g").Info("server session connected")
			log.Error("jsonrpc2 internal error")
			log.Warn("keepalive ping failed")
			assert.Equal(t, tc.wantInfo, bytes.Contains(buf.Bytes(), []byte("server session connected")), buf.String())
			assert.Contains(t, buf.String(), "jsonrpc2 internal error")
			assert.Contains(t, buf.String(), "keepalive ping failed")
		})
	}
}

func TestForNil(t *testing.T) {
	t.Parallel()
	assert.Nil(t, sdklog.For(nil))
}

func TestForKeepsAttrsAndGroups(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	sdklog.For(slog.New(slog.NewTextHandler(&buf, nil))).With("component", "sdk").WithGroup("g").Warn("w", "k", "v")
	assert.Contains(t, buf.String(), "component=sdk")
	assert.Contains(t, buf.String(), "g.k=v")
}
