package sdkpatch

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/segmentio/encoding/json"
	"github.com/stretchr/testify/require"
)

// patchFile is the change, relative to this package.
const patchFile = "../../docs/patches/go-sdk-unmarshal.patch"

// decoderWay is the go-sdk's internal json.Unmarshal as released (after
// its depth check, which the patch keeps): a streaming decoder over the
// bytes.
func decoderWay(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DontMatchCaseInsensitiveStructFields()
	return dec.Decode(v)
}

// parseWay is the same with the patch applied.
func parseWay(data []byte, v any) error {
	_, err := json.Parse(data, v, json.DontMatchCaseInsensitiveStructFields)
	return err
}

// hunks reads a unified diff: for each hunk, the lines it expects (context
// and removed) and the lines it leaves (context and added), by file.
func hunks(t *testing.T, diff []byte) (file string, olds, news []string) {
	t.Helper()
	var old, new strings.Builder
	flush := func() {
		if old.Len() > 0 || new.Len() > 0 {
			olds, news = append(olds, old.String()), append(news, new.String())
		}
		old.Reset()
		new.Reset()
	}
	s := bufio.NewScanner(bytes.NewReader(diff))
	for s.Scan() {
		line := s.Text()
		switch {
		case strings.HasPrefix(line, "--- a/"):
			file = strings.TrimPrefix(line, "--- a/")
		case strings.HasPrefix(line, "+++ "):
		case strings.HasPrefix(line, "@@"):
			flush()
		case strings.HasPrefix(line, "-"):
			old.WriteString(line[1:] + "\n")
		case strings.HasPrefix(line, "+"):
			new.WriteString(line[1:] + "\n")
		default:
			ctx := strings.TrimPrefix(line, " ")
			old.WriteString(ctx + "\n")
			new.WriteString(ctx + "\n")
		}
	}
	flush()
	require.NoError(t, s.Err())
	return file, olds, news
}

// TestPatchAppliesToGoSDK: every hunk of the patch finds its lines in the
// go-sdk of go.mod, and the go-sdk does not already say what the patch
// would make it say (then the patch is obsolete and can go).
func TestPatchAppliesToGoSDK(t *testing.T) {
	diff, err := os.ReadFile(patchFile)
	require.NoError(t, err)
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/modelcontextprotocol/go-sdk").Output()
	require.NoError(t, err, "locating the go-sdk in the module cache")
	file, olds, news := hunks(t, diff)
	require.Equal(t, "internal/json/json.go", file)
	require.NotEmpty(t, olds)
	src, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), file))
	require.NoError(t, err)
	for i, old := range olds {
		require.Contains(t, string(src), old, "hunk %d of the patch does not apply to the go-sdk in go.mod", i+1)
	}
	require.Contains(t, string(src), "NewDecoder(bytes.NewReader(data)).Decode(v)", "the go-sdk no longer decodes through a streaming decoder: the patch is obsolete")
	require.Contains(t, news[len(news)-1], "json.Parse(data, v, json.DontMatchCaseInsensitiveStructFields)")
}

// messages are MCP messages as the SDK reads them: JSON-RPC requests,
// results of every content type, errors and notifications.
var messages = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello","n":1.5e3,"nested":{"a":[1,"two",null,true]}},"_meta":{"progressToken":"p-1","io.modelcontextprotocol/clientCapabilities":{"sampling":{},"elicitation":{"form":{}}}}}}`,
	`{"jsonrpc":"2.0","id":"a","result":{"content":[{"type":"text","text":"This is a simple text response for testing."}]}}`,
	`{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"},{"type":"audio","data":"UklGRg==","mimeType":"audio/wav"}],"isError":false}}`,
	`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"resource","resource":{"uri":"test://r","mimeType":"text/plain","text":"é \u00e9 \ud83d\ude00"}},{"type":"resource_link","uri":"file:///x","name":"x"}],"structuredContent":{"k":[1,2]}}}`,
	`{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"boom"}],"isError":true}}`,
	`{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"Unknown tool: nope","data":{"tool":"nope"}}}`,
	`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p-1","progress":1,"total":3,"message":"step"}}`,
	`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":"l","data":{"msg":"hi"}}}`,
	`{"jsonrpc":"2.0","id":6,"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"q"}}],"maxTokens":10}}`,
	`{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete","content":[]}}`,
	"  {\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{}}\n",
	`{"jsonrpc":"2.0","id":9,"result":{"Content":[{"type":"text","Text":"case"}]}}`,
	`{"jsonrpc":"2.0","id":10,"result":{"content":[]}} trailing`,
	`{"jsonrpc":"2.0","id":`,
	``,
	`null`,
	`[1,2`,
	`{"a":"\x01"}`,
}

// targets are the values the SDK decodes into, fresh for each decode.
func targets() []func() any {
	return []func() any{
		func() any { return new(any) },
		func() any { return new(map[string]any) },
		func() any { return new(jsonrpc.Request) },
		func() any { return new(jsonrpc.Response) },
		func() any { return new(mcp.CallToolParams) },
		func() any { return new(mcp.CallToolResult) },
		func() any { return new(mcp.ProgressNotificationParams) },
		//lint:ignore SA1019 the patch must decode the deprecated types as the SDK does
		func() any { return new(mcp.LoggingMessageParams) },
		//lint:ignore SA1019 the patch must decode the deprecated types as the SDK does
		func() any { return new(mcp.CreateMessageParams) },
		func() any { return new(mcp.ClientCapabilities) },
	}
}

// sameAnswer checks that both ways decode data into a fresh value of each
// target alike: both fail or neither does, and the values are equal.
func sameAnswer(t *testing.T, data []byte) {
	for _, mk := range targets() {
		a, b := mk(), mk()
		errA, errB := decoderWay(data, a), parseWay(data, b)
		if (errA == nil) != (errB == nil) {
			t.Fatalf("%T of %q: the decoder says %v, the patch %v", a, data, errA, errB)
		}
		if errA == nil && !reflect.DeepEqual(a, b) {
			t.Fatalf("%T of %q: the decoder reads %#v, the patch %#v", a, data, a, b)
		}
	}
}

// TestPatchAnswersAlike: the messages decode alike both ways.
func TestPatchAnswersAlike(t *testing.T) {
	t.Parallel()
	for _, m := range messages {
		sameAnswer(t, []byte(m))
	}
}

// FuzzPatchAnswersAlike: any bytes decode alike both ways.
func FuzzPatchAnswersAlike(f *testing.F) {
	for _, m := range messages {
		f.Add([]byte(m))
	}
	f.Fuzz(func(t *testing.T, data []byte) { sameAnswer(t, data) })
}

// TestPatchSavesTheBuffer: decoding a message allocates the 32 KiB read
// buffer as released, and not with the patch.
func TestPatchSavesTheBuffer(t *testing.T) {
	data := []byte(messages[0])
	bytesOf := func(decode func([]byte, any) error) float64 {
		res := testing.Benchmark(func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var req jsonrpc.Request
				if err := decode(data, &req); err != nil {
					b.Fatal(err)
				}
			}
		})
		return float64(res.AllocedBytesPerOp())
	}
	released, patched := bytesOf(decoderWay), bytesOf(parseWay)
	t.Logf("a tools/call request: %.0f B allocated as released, %.0f B with the patch", released, patched)
	require.GreaterOrEqual(t, released, float64(32<<10))
	require.Less(t, patched, float64(4<<10))
}

// BenchmarkUnmarshal decodes a tools/call request and a text result as
// the go-sdk does, as released (decoder) and with the patch (parse).
func BenchmarkUnmarshal(b *testing.B) {
	for _, m := range []struct {
		name string
		data string
		into func() any
	}{
		{"request", messages[0], func() any { return new(jsonrpc.Request) }},
		{"result", messages[1], func() any { return new(jsonrpc.Response) }},
		{"params", `{"name":"echo","arguments":{"text":"hello"}}`, func() any { return new(mcp.CallToolParams) }},
	} {
		for _, way := range []struct {
			name   string
			decode func([]byte, any) error
		}{{"decoder", decoderWay}, {"parse", parseWay}} {
			b.Run(m.name+"/"+way.name, func(b *testing.B) {
				data := []byte(m.data)
				b.ReportAllocs()
				for b.Loop() {
					if err := way.decode(data, m.into()); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
