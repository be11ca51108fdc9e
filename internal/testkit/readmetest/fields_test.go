package readmetest

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/decisionlog"
	"github.com/toolgate/toolgate/hooks/audit"
	"github.com/toolgate/toolgate/internal/server/shadow"
	"github.com/toolgate/toolgate/metrics"
)

// TestReadmeAuditFieldsAndMetrics: the audit fields and metric names the
// documentation (docs/operating.md's audit bullet, every page for the
// metrics) and docs/contract.md §10 name are the ones the code writes.
func TestReadmeAuditFieldsAndMetrics(t *testing.T) {
	root := checkout(t)
	contract, err := os.ReadFile(filepath.Join(root, "docs", "contract.md"))
	require.NoError(t, err)
	// md is every guide page (the contract aside, which has its own checks).
	var guides strings.Builder
	for _, p := range guidePages(t, root) {
		guides.WriteString(readPage(t, root, p) + "\n")
	}
	md, cp := guides.String(), string(contract)
	operating := readPage(t, root, "docs/operating.md")
	section10 := between(cp, "## 10. ", "## 11. ")

	// Audit: the JSON names of audit.Record.
	var fields []string
	rt := reflect.TypeFor[audit.Record]()
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		fields = append(fields, name)
	}
	require.NotEmpty(t, fields)
	bullet := between(operating, "- **Audit trail**", "- **Metrics**")
	require.NotEmpty(t, bullet, "docs/operating.md: no - **Audit trail** bullet")
	for _, f := range fields {
		if f == "approval_id" || f == "approved_by" {
			require.Contains(t, md, "`"+f+"`", "the documentation never names the audit field %q", f)
		} else {
			require.Contains(t, bullet, "`"+f+"`", "docs/operating.md's audit bullet does not name the field %q", f)
		}
		require.Regexp(t, "(?m)^\\|[^|]*`"+f+"`", section10, "docs/contract.md §10's audit table has no row for %q", f)
	}

	// Metrics: the names /metrics serves, once each has a sample.
	m := metrics.New()
	// toolgate_upstream_drift_total{upstream} is served once it has a
	// sample (the others start at zero).
	m.UpstreamDrift("files")
	// So is toolgate_limited_total{tool} (docs/contract.md §18).
	m.Limited("echo")
	// The decision log's counters are registered with it when
	// --decision-log is set (internal/server/gateway/observe.go).
	m.Registry().MustRegister((*decisionlog.Logger)(nil).Collectors()...)
	// So are the shadow's, with --shadow-policy (docs/contract.md §14).
	shadow.New(shadow.Options{Registerer: m.Registry()})
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	served := map[string]bool{}
	for _, n := range regexp.MustCompile(`(?m)^# HELP (toolgate_\w+)`).FindAllStringSubmatch(rec.Body.String(), -1) {
		served[n[1]] = true
	}
	documented := map[string]bool{}
	for _, n := range regexp.MustCompile("`(toolgate_[a-z][a-z0-9_]*)").FindAllStringSubmatch(md, -1) {
		documented[n[1]] = true
	}
	inContract := map[string]bool{}
	for _, n := range regexp.MustCompile("`(toolgate_[a-z][a-z0-9_]*)").FindAllStringSubmatch(section10, -1) {
		inContract[n[1]] = true
	}
	require.NotEmpty(t, served, "/metrics served no toolgate_ metric:\n%s", rec.Body.String())
	require.Equal(t, keys(served), keys(inContract), "docs/contract.md §10's metrics and the ones /metrics serves")
	for n := range served {
		require.True(t, documented[n], "the documentation never names the metric %s", n)
	}
	for n := range documented {
		require.True(t, served[n], "the documentation names %s, which /metrics does not serve", n)
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
