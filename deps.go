//go:build tools

package toolgate

import (
	_ "github.com/fsnotify/fsnotify"
	_ "github.com/jackc/pgx/v5"
	_ "github.com/modelcontextprotocol/go-sdk/mcp"
	_ "github.com/open-policy-agent/opa/v1/rego"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/santhosh-tekuri/jsonschema/v5"
	_ "github.com/stretchr/testify/require"
	_ "go.uber.org/goleak"
	_ "gopkg.in/yaml.v3"
	_ "modernc.org/sqlite"
)
