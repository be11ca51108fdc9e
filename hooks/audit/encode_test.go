package audit

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// checkEncoding fails unless appendRecord writes r exactly as json.Marshal
// does, and fails exactly when it fails.
func checkEncoding(t *testing.T, r *Record) {
	t.Helper()
	want, werr := json.Marshal(r)
	prefix := []byte("kept:")
	got, gerr := appendRecord(bytes.Clone(prefix), r)
	if werr != nil {
		if gerr == nil {
			t.Fatalf("json.Marshal fails (%v), appendRecord wrote %s", werr, got)
		}
		return
	}
	if gerr != nil {
		t.Fatalf("appendRecord fails (%v), json.Marshal wrote %s", gerr, want)
	}
	if !bytes.HasPrefix(got, prefix) || !bytes.Equal(got[len(prefix):], want) {
		t.Fatalf("appendRecord wrote\n%s\njson.Marshal\n%s", got, want)
	}
}

// TestAppendRecordAsMarshal: the escapes encoding/json makes (HTML-safe
// <, >, &, U+2028, U+2029, control characters, invalid UTF-8), a meta that
// is not compact or not JSON, every omitempty field present and absent,
// and durations at the edges of the float encoder's forms.
func TestAppendRecordAsMarshal(t *testing.T) {
	t.Parallel()
	full := Record{
		DecisionID: "0123456789abcdef0123456789abcdef", Timestamp: "2026-12-01T21:51:29.123456789Z",
		Subject: "cid", Tool: "echo", Method: "demo.echo", Outcome: "result", Reason: "a; b", Error: "",
		DurationMS: 1.25, Revision: "3/abcdef12", Meta: json.RawMessage(`{"festi/runId":"r-1"}`),
		ArgumentsSHA256: strings.Repeat("ab", 32), ApprovalID: "ap-1", ApprovedBy: "ann",
		Stage: "run", Grant: "override", Rules: []string{"grant.rego:3", "call.rego:7"},
		Denials: []Denial{{Reason: "no", Hook: "ledger"}, {Reason: "Rule says no.", Rules: []string{"call.rego:3"}}, {Reason: ""}},
		TraceID: "4bf92f3577b34da6a3ce929d0e0e4736",
	}
	checkEncoding(t, &full)
	checkEncoding(t, &Record{})
	for _, s := range []string{
		`<script>&amp;</script>`, "quote \" and backslash \\", "tab\tnew\nline\rcr\bbs\fff", "\x00\x01\x1f\x7f",
		"U+2028 \u2028 U+2029 \u2029", "héllo wörld ✓", "bad \xff\xfe utf-8 \xe2\x80", "\xed\xa0\x80 surrogate",
	} {
		r := full
		r.Subject, r.Reason, r.Error, r.Rules = s, s, s, []string{s}
		r.Denials = []Denial{{Reason: s, Hook: s, Rules: []string{s}}}
		checkEncoding(t, &r)
	}
	for _, m := range []string{
		"", "null", `{}`, ` { "a" : [ 1 , 2 ] } `, "{\"a\":\"<&>\u2028\u2029\"}", `{"a":"\u003c"}`, `{"a":"\xff"}`,
		`{"a":`, `not json`, `{"a":1}{}`, "{\"a\":\"\n\"}", `{"k":"é"}`,
	} {
		r := full
		r.Meta = json.RawMessage(m)
		checkEncoding(t, &r)
	}
	r := full
	r.Meta = nil
	checkEncoding(t, &r)
	for _, f := range []float64{0, math.Copysign(0, -1), 1e-6, 9.99e-7, 1e-7, 1e20, 1e21, 123456.789, -3.5, math.MaxFloat64,
		math.SmallestNonzeroFloat64, math.NaN(), math.Inf(1), math.Inf(-1)} {
		r := full
		r.DurationMS = f
		checkEncoding(t, &r)
	}
}

// TestAppendRecordAllocs: a record without anything to escape is encoded
// into a buffer with room without allocating.
func TestAppendRecordAllocs(t *testing.T) {
	r := Record{DecisionID: "0123456789abcdef0123456789abcdef", Timestamp: "2026-12-01T21:51:29.123456789Z", Subject: "cid",
		Tool: "echo", Method: "demo.echo", Outcome: "result", DurationMS: 0.412, Revision: "1/abcdef12",
		Meta: json.RawMessage(`{"festi/runId":"r-1"}`), ArgumentsSHA256: strings.Repeat("ab", 32), Stage: "run", Grant: "no_override"}
	buf := make([]byte, 0, 4096)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := appendRecord(buf[:0], &r); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs)
}

// FuzzAppendRecord: a differential test of appendRecord against
// json.Marshal over records of arbitrary strings, durations and meta.
//
//	go test -run '^$' -fuzz FuzzAppendRecord -fuzztime 10s ./hooks/audit
func FuzzAppendRecord(f *testing.F) {
	f.Add("cid", "echo", "", "run", 0.412, []byte(`{"festi/runId":"r-1"}`), "grant.rego:3", "")
	f.Add("<a&b>", "\u2028", "\xff", "\x00\"\\", 1e-7, []byte(` {"a" : "<\u2029>"} `), "x\x00y", "no\x00ledger")
	f.Add("", "", "", "", math.Inf(1), []byte(`{`), "", "")
	f.Add("é", "ok", "a; b", "", 1e21, []byte{}, "", "\x00")
	f.Fuzz(func(t *testing.T, a, b, c, d string, ms float64, meta []byte, rules, denials string) {
		r := Record{
			DecisionID: a, Timestamp: b, Subject: c, Tool: d, Method: a + b, Outcome: c, Reason: d + a, Error: b,
			DurationMS: ms, Revision: c + d, Meta: meta, ArgumentsSHA256: d, ApprovalID: a, ApprovedBy: b,
			Stage: c, Grant: d, TraceID: a,
		}
		if rules != "" {
			r.Rules = strings.Split(rules, "\x00")
		}
		if denials != "" {
			for i, s := range strings.Split(denials, "\x00") {
				dn := Denial{Reason: s}
				if i%2 == 1 {
					dn.Hook = c
				}
				if i%3 == 0 {
					dn.Rules = r.Rules
				}
				r.Denials = append(r.Denials, dn)
			}
		}
		checkEncoding(t, &r)
	})
}

// TestAppendRecordKnowsEveryField: a Record with every field set (by
// reflection, so a field added to Record is set too) is appended as
// json.Marshal writes it: a field the appender does not know fails here.
func TestAppendRecordKnowsEveryField(t *testing.T) {
	t.Parallel()
	var r Record
	fill(t, reflect.ValueOf(&r).Elem())
	checkEncoding(t, &r)
}

// fill sets every field of the struct v to a non-zero value.
func fill(t *testing.T, v reflect.Value) {
	t.Helper()
	for i := range v.NumField() {
		f := v.Field(i)
		switch {
		case f.Type() == reflect.TypeFor[json.RawMessage]():
			f.SetBytes([]byte(`{"k":1}`))
		case f.Kind() == reflect.String:
			f.SetString(v.Type().Field(i).Name)
		case f.Kind() == reflect.Float64:
			f.SetFloat(1.5)
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.String:
			f.Set(reflect.ValueOf([]string{"a.rego:1"}).Convert(f.Type()))
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Struct:
			s := reflect.MakeSlice(f.Type(), 1, 1)
			fill(t, s.Index(0))
			f.Set(s)
		default:
			t.Fatalf("fill: field %s of kind %s: teach fill to set it", v.Type().Field(i).Name, f.Kind())
		}
	}
}
