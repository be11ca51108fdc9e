package authzen_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/example/demo"
	"github.com/toolgate/toolgate/internal/server/authzen"
	"github.com/toolgate/toolgate/toolcall"
)

// TestBodiesAreBounded: an Access Evaluation body is read up to
// MaxEvaluationBytes and an Access Evaluations body up to
// MaxEvaluationsBytes; one byte more answers 413 without a decision, for
// a caller holding the PDP role.
func TestBodiesAreBounded(t *testing.T) {
	t.Parallel()
	eng, err := engine.New(context.Background(), toolgate.Source("", ""))
	require.NoError(t, err)
	pep := &toolcall.Caller{Subject: "pep", Roles: []string{"pdp"}}
	mux := http.NewServeMux()
	for p, h := range authzen.Routes(authzen.Options{Revisions: eng, Methods: demo.Methods(),
		Caller: func(*http.Request) *toolcall.Caller { return pep }, PDPRoles: []string{"pdp"}}) {
		mux.Handle(p, h)
	}
	// body is an evaluation of exactly size bytes: the padding is a
	// context member, which a decision does not read.
	body := func(size int) string {
		head := `{"subject":{"type":"user","id":"nora"},"action":{"name":"tools/list"},"resource":{"type":"mcp_tool","id":"echo"},"context":{"pad":"`
		tail := `"}}`
		return head + strings.Repeat("x", size-len(head)-len(tail)) + tail
	}
	for _, c := range []struct {
		path string
		max  int
	}{
		{authzen.EvaluationPath, authzen.MaxEvaluationBytes},
		{authzen.EvaluationsPath, authzen.MaxEvaluationsBytes},
	} {
		for _, size := range []int{c.max, c.max + 1, 8 * c.max} {
			rr := httptest.NewRecorder()
			mux.ServeHTTP(rr, httptest.NewRequest(http.MethodPost, c.path, strings.NewReader(body(size))))
			if size <= c.max {
				assert.Equal(t, http.StatusOK, rr.Code, "%s, %d bytes: %s", c.path, size, rr.Body)
				assert.Contains(t, rr.Body.String(), `"decision"`)
				continue
			}
			assert.Equal(t, http.StatusRequestEntityTooLarge, rr.Code, "%s, %d bytes", c.path, size)
			assert.NotContains(t, rr.Body.String(), `"decision"`)
		}
	}
	assert.Less(t, authzen.MaxEvaluationBytes, authzen.MaxEvaluationsBytes)
	assert.LessOrEqual(t, authzen.MaxEvaluationsBytes, 1<<20, "far below the server's 4 MiB")
}
