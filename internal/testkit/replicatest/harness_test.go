// Package replicatest runs toolgate as an organisation does
// (docs/contract.md §14): two replicas from the built binary, policy from
// an OPA bundle server, the ledger and approvals in one PostgreSQL. It holds tests only.
package replicatest

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/open-policy-agent/opa/v1/plugins/logs"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/identity"
	"github.com/toolgate/toolgate/internal/runtime/bundle"
	_ "github.com/toolgate/toolgate/internal/server/gateway" // see buildBinary
	"github.com/toolgate/toolgate/internal/testkit/bundletest"
	"github.com/toolgate/toolgate/internal/testkit/mcptest"
	"github.com/toolgate/toolgate/internal/testkit/proctest"
)

const (
	// deadline bounds every wait for a condition: a failure bound only.
	deadline = 60 * time.Second
	// callTimeout bounds one client request.
	callTimeout = 30 * time.Second
	// version is the protocol revision the clients speak (with sessions:
	// each client stays on its replica).
	version = "2025-11-25"
)

// buildBinary builds cmd/toolgate once per test run. go test caches a
// result by what the test binary is built from and the files it opens:
// the blank import of gateway and proctest.Build's stat of cmd/toolgate's
// files make a change to what the built binary runs re-run the test.
func buildBinary(t *testing.T) string {
	t.Helper()
	return proctest.Build(t, "./cmd/toolgate")
}

// signer is a bundle signing key pair.
type signer struct{ private, public string }

func newSigner(t *testing.T) signer {
	t.Helper()
	private, public := bundletest.KeyPair(t)
	return signer{private, public}
}

// probeRego answers the probe tool from the policy's data and the tool's
// registry row (its argument's default): a call that mixed two revisions
// would answer two names.
const probeRego = `package toolgate.call

result := {"content": [{"type": "text", "text": sprintf("%s %s", [data.probe.rev, input.tool.arguments[0].default])}]} if {
	input.tool.name == "probe"
}
`

// revisionSource is the bundled example plus the probe tool, whose row and
// data both name rev; extra files are added to the policies.
func revisionSource(t *testing.T, rev string, extra map[string]string) engine.Source {
	t.Helper()
	reg := string(toolgate.ExampleRegistry()) + fmt.Sprintf(`
  - name: probe
    method: demo.echo
    arguments: [{ name: text, type: string, default: %q }]
`, rev)
	fsys := fstest.MapFS{
		"registry.yaml":       {Data: []byte(reg)},
		"policies/probe.rego": {Data: []byte(probeRego)},
		"policies/data.json":  {Data: []byte(fmt.Sprintf(`{"probe": {"rev": %q}}`, rev))},
	}
	for _, name := range []string{"grant.rego", "call.rego"} {
		data, err := toolgate.Bundled.ReadFile("rego/" + name)
		require.NoError(t, err)
		fsys["policies/"+name] = &fstest.MapFile{Data: data}
	}
	for name, src := range extra {
		fsys["policies/"+name] = &fstest.MapFile{Data: []byte(src)}
	}
	return engine.Source{FS: fsys, Registry: "registry.yaml", Policies: "policies"}
}

// signedBundle is the bundle of revision rev signed with key.
func signedBundle(t *testing.T, rev string, key string) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, bundle.Build(context.Background(), &buf, revisionSource(t, rev, nil), bundle.BuildOptions{Revision: rev, SigningKeyFile: key}))
	return buf.Bytes()
}

var urlLine = regexp.MustCompile(`toolgate: serving MCP \(streamable HTTP\) at (http://\S+)/mcp\n`)

// writeTokens writes a tokens file into dir for ann (admin) and bea
// (beaRole) and returns its path.
func writeTokens(t *testing.T, dir, beaRole string) string {
	t.Helper()
	return mcptest.WriteTokens(t, dir, map[string]identity.TokenEntry{
		annToken: {Subject: "ann", Roles: []string{"admin"}},
		beaToken: {Subject: "bea", Roles: []string{beaRole}},
	})
}

// startReplicas starts replicas a and b of bin serving with args, each
// with its state directory and audit file in dir.
func startReplicas(t *testing.T, bin, dir string, args ...string) []*replica {
	t.Helper()
	var replicas []*replica
	for _, name := range []string{"a", "b"} {
		r := &replica{name: name, bin: bin, args: args, state: filepath.Join(dir, "state-"+name), audit: filepath.Join(dir, "audit-"+name+".jsonl")}
		r.start(t)
		replicas = append(replicas, r)
	}
	return replicas
}

// replica is one `toolgate serve` process; its state directory outlives
// restarts.
type replica struct {
	name  string
	bin   string
	args  []string
	state string // XDG_STATE_HOME
	audit string

	base string // http://ADDR
	proc *proctest.Proc
}

// start runs the replica and waits for the URL it prints.
func (r *replica) start(t *testing.T) {
	t.Helper()
	cmd := exec.Command(r.bin, append([]string{"serve", "--http", "127.0.0.1:0", "--audit", r.audit}, r.args...)...)
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+r.state)
	out := &proctest.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	r.proc = proctest.Start(t, "replica "+r.name, cmd)
	r.base = r.proc.Await(t, out, urlLine)[1]
}

// stop kills the replica and waits for it to exit.
func (r *replica) stop() { r.proc.Stop() }

// connect opens a client session to the replica as the token's caller.
func (r *replica) connect(t *testing.T, token string) *mcp.ClientSession {
	t.Helper()
	return r.connectWith(t, token, nil)
}

// connectWith is connect with client options (notification handlers).
func (r *replica) connectWith(t *testing.T, token string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	hc := &http.Client{Transport: mcptest.Bearer{Token: token}}
	client := mcp.NewClient(&mcp.Implementation{Name: "replicatest", Version: "v0"}, opts)
	ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: r.base + "/mcp", HTTPClient: hc},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	require.NoError(t, err, "connect to %s", r.name)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// health is the operator's /healthz?verbose=1 of the replica.
type health struct {
	Status         string `json:"status"`
	LastError      string `json:"last_error"`
	BundleRevision string `json:"bundle_revision"`
	Bundle         *struct {
		Revision  string `json:"revision"`
		ETag      string `json:"etag"`
		Persisted bool   `json:"persisted"`
		LastError string `json:"last_error"`
	} `json:"bundle"`
}

func (r *replica) health(t *testing.T, token string) health {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
	defer cancel()
	status, body := mcptest.Get(t, ctx, r.base+"/healthz?verbose=1", token)
	require.Equal(t, http.StatusOK, status, "healthz of %s: %s", r.name, body)
	var h health
	require.NoError(t, json.Unmarshal(body, &h), "%s", body)
	return h
}

// auditRevisions are the revisions of the replica's audit records of tool.
func (r *replica) auditRevisions(t *testing.T, tool string) []string {
	t.Helper()
	data, err := os.ReadFile(r.audit)
	require.NoError(t, err)
	var out []string
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var rec struct {
			Tool     string `json:"tool"`
			Revision string `json:"revision"`
		}
		if len(line) == 0 || json.Unmarshal(line, &rec) != nil || rec.Tool != tool {
			continue
		}
		out = append(out, rec.Revision)
	}
	return out
}

// answer is a tools/call's one text and whether it is an error.
type answer = mcptest.Answer

func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, meta mcp.Meta) answer {
	t.Helper()
	return mcptest.Call(t, callTimeout, cs, name, args, meta)
}

// until polls cond until it holds; deadline bounds a failure only.
func until(t *testing.T, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > deadline {
			t.Fatalf("%s: not within %s", what, deadline)
		}
		time.Sleep(25 * time.Millisecond) // the poll's period, not a synchronisation
	}
	return time.Since(start)
}

// logSink is an HTTP decision-log sink: it decodes each upload (a gzip
// JSON array) with OPA's own event type, as a sink of OPA's logs would.
type logSink struct {
	mu     sync.Mutex
	events []logs.EventV1
	bad    []string
}

func (s *logSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var batch []logs.EventV1
	zr, err := gzip.NewReader(r.Body)
	if err == nil {
		err = json.NewDecoder(zr).Decode(&batch)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.bad = append(s.bad, err.Error())
		http.Error(w, "bad upload", http.StatusBadRequest)
		return
	}
	s.events = append(s.events, batch...)
}

// calls returns the call events by decision id, and the uploads that did
// not decode.
func (s *logSink) calls() (map[string][]logs.EventV1, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]logs.EventV1{}
	for _, e := range s.events {
		if e.Path == "toolgate/call" {
			out[e.DecisionID] = append(out[e.DecisionID], e)
		}
	}
	return out, append([]string(nil), s.bad...)
}

// auditCalls are the replica's audit records: revision by decision id.
func (r *replica) auditCalls(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile(r.audit)
	require.NoError(t, err)
	out := map[string]string{}
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var rec struct {
			DecisionID string `json:"decision_id"`
			Revision   string `json:"revision"`
		}
		if len(line) == 0 || json.Unmarshal(line, &rec) != nil || rec.DecisionID == "" {
			continue
		}
		out[rec.DecisionID] = rec.Revision
	}
	return out
}
