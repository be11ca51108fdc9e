package suggest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/toolgate/toolgate/internal/suggest"
)

func TestClosest(t *testing.T) {
	t.Parallel()
	keys := []string{"registry", "policy", "tokens", "session_timeout", "token_url", "upstreams"}
	for in, want := range map[string]string{
		"sesion_timeout": "session_timeout", // one letter
		"tokenUrl":       "token_url",       // camelCase of a snake_case key
		"policies":       "policy",          // a long name: three edits
		"upstream":       "upstreams",
		"tokens":         "", // a candidate itself
		"colour":         "", // nothing close
		"pol":            "", // short names: two edits at most
	} {
		assert.Equal(t, want, suggest.Closest(in, keys), in)
	}
	assert.Equal(t, "grant", suggest.Closest("grants", []string{"call", "grant", "result"}))
}
