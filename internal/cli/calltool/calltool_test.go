package calltool_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/cli/calltool"
)

func TestParseArguments(t *testing.T) {
	got, err := calltool.ParseArguments([]string{`text=hi there`, `n=42`, `ok=true`, `s="42"`, `list=["a"]`, `empty=`})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"text": "hi there", "n": 42.0, "ok": true, "s": "42", "list": []any{"a"}, "empty": ""}, got)
	got, err = calltool.ParseArguments([]string{`{"text":"hi","n":1}`})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"text": "hi", "n": 1.0}, got)
	got, err = calltool.ParseArguments(nil)
	require.NoError(t, err)
	require.Empty(t, got)
	for _, bad := range [][]string{{"novalue"}, {"=x"}, {"a=1", "a=2"}, {`{"unterminated`}} {
		_, err := calltool.ParseArguments(bad)
		require.Error(t, err, "%q", bad)
	}
}

func TestEndpointOf(t *testing.T) {
	require.Equal(t, "http://127.0.0.1:8787/mcp", calltool.EndpointOf("127.0.0.1:8787"))
	require.Equal(t, "http://127.0.0.1:9/mcp", calltool.EndpointOf("0.0.0.0:9"))
	require.Equal(t, "http://127.0.0.1:9/mcp", calltool.EndpointOf(":9"))
	require.Equal(t, "http://[::1]:9/mcp", calltool.EndpointOf("[::1]:9"))
	require.Equal(t, "http://127.0.0.1:9/mcp", calltool.EndpointOf("[::]:9"))
}

// TestCall: Call sends the token and the arguments to a real go-sdk
// server and returns its result, a refusal as IsError; an address
// nobody serves is a *ConnectError.
func TestCall(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "v0"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	var auth string
	mcp.AddTool(server, &mcp.Tool{Name: "echo"}, func(ctx context.Context, req *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		auth = req.Extra.Header.Get("Authorization")
		if a.Text == "" {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no text"}}}, nil, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	defer srv.Close()

	res, err := calltool.Call(t.Context(), calltool.Options{URL: srv.URL, Token: "tok", Tool: "echo", Arguments: map[string]any{"text": "hi"}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	require.Equal(t, "Bearer tok", auth)
	var out bytes.Buffer
	require.NoError(t, calltool.WriteText(&out, res))
	require.Equal(t, "hi\n", out.String())

	res, err = calltool.Call(t.Context(), calltool.Options{URL: srv.URL, Tool: "echo"})
	require.NoError(t, err)
	require.True(t, res.IsError)

	dead := httptest.NewServer(nil)
	dead.Close()
	_, err = calltool.Call(t.Context(), calltool.Options{URL: dead.URL, Tool: "echo"})
	var ce *calltool.ConnectError
	require.ErrorAs(t, err, &ce)
	require.Contains(t, err.Error(), "is toolgate serve running there?")
}
