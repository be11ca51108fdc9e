package identity_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/identity"
)

// TestAccessTokenNeverPrinted: the caller's token kept for token exchange
// (docs/contract.md §17) shows in no printer: fmt's verbs, slog, JSON, nor
// inside a struct.
func TestAccessTokenNeverPrinted(t *testing.T) {
	t.Parallel()
	const raw = "eyJ.SECRET-caller-token.sig"
	tok := identity.NewAccessToken(raw, time.Unix(1, 0))
	holder := struct {
		T *identity.AccessToken
		U any
	}{tok, tok}
	var out []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%T"} {
		out = append(out, fmt.Sprintf(verb, tok), fmt.Sprintf(verb, holder))
	}
	b, err := json.Marshal(holder)
	require.NoError(t, err)
	out = append(out, string(b))
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("x", slog.Any("token", tok), slog.Any("holder", holder))
	slog.New(slog.NewTextHandler(&logs, nil)).Info("x", slog.Any("token", tok), "t", tok)
	out = append(out, logs.String())
	for _, s := range out {
		require.NotContains(t, s, "SECRET", s)
	}
	require.Equal(t, raw, tok.Reveal())

	ctx := identity.WithAccessToken(context.Background(), tok)
	require.Same(t, tok, identity.AccessTokenFrom(ctx))
	require.Nil(t, identity.AccessTokenFrom(context.Background()))
	require.Empty(t, (*identity.AccessToken)(nil).Reveal())
}
