package scaffold_test

import (
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/toolgate/toolgate/internal/cli/scaffold"
)

// FuzzUpstreamInSettings: whatever --upstream value init accepts, the
// settings file it writes holds exactly that upstream (name and command or
// URL) and nothing else: the value cannot add keys or entries.
func FuzzUpstreamInSettings(f *testing.F) {
	for _, s := range []string{
		"files=npx -y @modelcontextprotocol/server-filesystem /srv",
		`x=node "a b.mjs" 'c d' #e`,
		"web=https://example.com/mcp?a=1&b=2",
		"y=cmd\n  import: false\n  - name: evil",
		`z=a: b, {c: d}, [e] "f\"g" \\ ---`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, flag string) {
		u, err := scaffold.ParseUpstream(flag)
		if err != nil {
			return
		}
		files, err := scaffold.Render(scaffold.Options{Upstream: u})
		if err != nil {
			t.Fatalf("render %q: %v", flag, err)
		}
		for _, file := range files {
			if file.Name != "toolgate.yaml" {
				continue
			}
			var doc map[string]any
			if err := yaml.Unmarshal(file.Data, &doc); err != nil {
				t.Fatalf("%q: toolgate.yaml does not parse: %v\n%s", flag, err, file.Data)
			}
			ups, _ := doc["upstreams"].([]any)
			if len(ups) != 1 {
				t.Fatalf("%q: %d upstreams\n%s", flag, len(ups), file.Data)
			}
			want := map[string]any{"name": u.Name, "import": true}
			if u.URL != "" {
				want["url"] = u.URL
			} else {
				want["command"] = u.Command
			}
			got, _ := ups[0].(map[string]any)
			if len(got) != len(want) {
				t.Fatalf("%q: upstream entry %v, want %v", flag, got, want)
			}
			for k, v := range want {
				if got[k] != v {
					t.Fatalf("%q: upstream %s = %#v, want %#v", flag, k, got[k], v)
				}
			}
		}
	})
}
