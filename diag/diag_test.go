package diag_test

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/diag"
)

func TestDiagnosticString(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d    diag.Diagnostic
		want string
	}{
		{diag.Diagnostic{Message: "boom"}, "boom"},
		{diag.Diagnostic{File: "a.rego", Message: "boom"}, "a.rego: boom"},
		{diag.Diagnostic{File: "a.rego", Line: 3, Message: "boom"}, "a.rego:3: boom"},
		{diag.Diagnostic{File: "a.rego", Line: 3, Column: 7, Code: "rego_type_error", Message: "boom"}, "a.rego:3:7: rego_type_error: boom"},
		{diag.Diagnostic{Column: 7, Message: "no file, no position"}, "no file, no position"},
		{diag.Diagnostic{Row: diag.RowOf(0), Field: "name", Message: "x"}, "tools[0]: name: x"},
		{diag.Diagnostic{File: "r.yaml", Row: diag.RowOf(3), Tool: "getReward", Field: "arguments[0].type", Code: "registry_invalid", Message: "x"},
			"r.yaml: tools[3] (getReward): arguments[0].type: registry_invalid: x"},
	} {
		require.Equal(t, tc.want, tc.d.String())
	}
}

func TestDiagnosticLineString(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d    diag.Diagnostic
		want string
	}{
		{diag.Diagnostic{Message: "boom"}, "boom"},
		{diag.Diagnostic{File: "c.yaml", Code: "config_invalid", Column: 4, Message: "boom"}, "boom"},
		{diag.Diagnostic{Line: 3, Message: "boom"}, "line 3: boom"},
		{diag.Diagnostic{Field: "upstreams[1]", Message: "boom"}, "upstreams[1]: boom"},
		{diag.Diagnostic{File: "c.yaml", Line: 3, Field: "watch", Message: "boom"}, "line 3: watch: boom"},
		{diag.Diagnostic{Line: 3, Field: "watch"}, "line 3: watch: "},
	} {
		require.Equal(t, tc.want, tc.d.LineString())
	}
}

func TestListError(t *testing.T) {
	t.Parallel()
	one := &diag.List{Diagnostics: []diag.Diagnostic{{Message: "a"}}}
	require.Equal(t, "1 problem\n  a", one.Error())
	two := &diag.List{Diagnostics: []diag.Diagnostic{{Message: "a"}, {Message: "b"}}, Style: &diag.Style{
		Header: func(n int) string { return fmt.Sprintf("things: %d", n) },
		Item:   func(d diag.Diagnostic) string { return "<" + d.Message + ">" },
	}}
	require.Equal(t, "things: 2\n<a>\n<b>", two.Error())
	two.Style.Inline = true
	require.Equal(t, "things: 2: <a>; <b>", two.Error())
	two.Style.Header = nil
	require.Equal(t, "<a>; <b>", two.Error())
}

// TestListLeadInline: only the first diagnostic joins the header's line.
func TestListLeadInline(t *testing.T) {
	t.Parallel()
	st := &diag.Style{Header: func(int) string { return "file f" }, Indent: "  ", LeadInline: true}
	l := &diag.List{Style: st}
	require.Equal(t, "file f", l.Error())
	l.Add(diag.Diagnostic{Message: "a"})
	require.Equal(t, "file f: a", l.Error())
	l.Add(diag.Diagnostic{Message: "b"}, diag.Diagnostic{Message: "c"})
	require.Equal(t, "file f: a\n  b\n  c", l.Error())
	st.Inline = true
	require.Equal(t, "file f: a; b; c", l.Error())
}

// TestListUnwrapsAndViews: errors.Is sees the underlying error, and an
// error type that is a view of a List hands it to errors.As.
func TestListUnwrapsAndViews(t *testing.T) {
	t.Parallel()
	l := &diag.List{Diagnostics: []diag.Diagnostic{{File: "x", Message: "gone"}}, Err: fs.ErrNotExist}
	require.ErrorIs(t, fmt.Errorf("load: %w", l), fs.ErrNotExist)
	var got *diag.List
	require.ErrorAs(t, view{l}, &got)
	require.Same(t, l, got)
	require.Equal(t, l.Diagnostics, diag.From(fmt.Errorf("wrapped: %w", view{l})))
	require.Nil(t, diag.From(errors.New("plain")))
	require.Zero(t, (*diag.List)(nil).Len())
}

type view struct{ l *diag.List }

func (v view) Error() string      { return "view" }
func (v view) As(target any) bool { return diag.SetAs(target, v.l) }
