package pins

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
)

// Gone is the Status of a pinned tool that the upstream no longer lists
// (Review only: nothing is served for it, so it is no drift).
const Gone Status = -1

// Finding is one tool of an upstream that is not served as it is listed
// now: drifted, new, not recorded yet, or gone.
type Finding struct {
	Upstream string
	Tool     string
	Status   Status
	// Pinned is the tool's pin (Drifted, Gone).
	Pinned Pin
	// Current is its definition now (Drifted, New, Unrecorded).
	Current Definition
}

// Drift reports whether the finding keeps a listed tool from being served
// (every status but Gone).
func (x Finding) Drift() bool { return x.Status != Gone }

// Label is how the tool is named to people: UPSTREAM.TOOL, the imported
// row's name.
func (x Finding) Label() string { return x.Upstream + "." + x.Tool }

// Diff is the unified diff from the pinned definition to the current one;
// for a new tool, from nothing.
func (x Finding) Diff() string {
	if x.Status == Gone {
		return ""
	}
	return Diff(x.Label(), x.Pinned.Definition, x.Current)
}

// Review compares an upstream's current definitions (in its order) with
// the pins: one Finding for each tool that is not served as listed, in
// the upstream's order, then the pinned tools it no longer lists, by name.
func Review(f *File, upstream string, defs []Definition) []Finding {
	var out []Finding
	listed := map[string]bool{}
	for _, d := range defs {
		listed[d.Tool] = true
		st := f.Check(upstream, d)
		if st == Match {
			continue
		}
		p, _ := f.Pin(upstream, d.Tool)
		out = append(out, Finding{Upstream: upstream, Tool: d.Tool, Status: st, Pinned: p, Current: d})
	}
	var gone []string
	for tool := range f.Upstreams[upstream] {
		if !listed[tool] {
			gone = append(gone, tool)
		}
	}
	sort.Strings(gone)
	for _, tool := range gone {
		out = append(out, Finding{Upstream: upstream, Tool: tool, Status: Gone, Pinned: f.Upstreams[upstream][tool]})
	}
	return out
}

// WriteReport writes findings for people: a line per tool, and the diff of
// each drifted or new one.
func WriteReport(w io.Writer, findings []Finding) error {
	var b strings.Builder
	for _, x := range findings {
		switch x.Status {
		case Drifted:
			fmt.Fprintf(&b, "drifted: %s (pinned sha256 %s, now %s)\n", x.Label(), x.Pinned.SHA256, x.Current.SHA256)
			if !x.Pinned.StoredMatches() {
				fmt.Fprintf(&b, "  note: the definition stored in the pins file does not hash to its sha256 (edited by hand?): the diff is from the stored text\n")
			}
		case New:
			fmt.Fprintf(&b, "new: %s (sha256 %s)\n", x.Label(), x.Current.SHA256)
		case Unrecorded:
			fmt.Fprintf(&b, "not recorded: %s (sha256 %s; serve records the upstream's tools on its first import)\n", x.Label(), x.Current.SHA256)
		case Gone:
			fmt.Fprintf(&b, "gone: %s (pinned, no longer listed by the upstream)\n", x.Label())
		}
		if d := x.Diff(); d != "" {
			for line := range strings.SplitSeq(strings.TrimSuffix(d, "\n"), "\n") {
				b.WriteString("  " + line + "\n")
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Accept records an upstream's current definitions in f: with tools nil,
// every listed tool, and pinned tools it no longer lists are dropped;
// else the named tools (a tool the upstream no longer lists loses its
// pin). It returns the tools whose pin changed; a name that is neither
// listed nor pinned is an error, and then f is unchanged.
func Accept(f *File, upstream string, defs []Definition, tools []string) ([]string, error) {
	byName := map[string]Definition{}
	for _, d := range defs {
		byName[d.Tool] = d
	}
	if tools == nil {
		var changed []string
		for _, x := range Review(f, upstream, defs) {
			changed = append(changed, x.Tool)
		}
		f.Record(upstream)
		f.Upstreams[upstream] = map[string]Pin{}
		for _, d := range defs {
			f.Set(upstream, d)
		}
		return changed, nil
	}
	for _, t := range tools {
		_, listed := byName[t]
		_, pinned := f.Pin(upstream, t)
		if !listed && !pinned {
			return nil, fmt.Errorf("%s.%s: the upstream lists no such tool and it has no pin", upstream, t)
		}
	}
	var changed []string
	for _, t := range tools {
		if slices.Contains(changed, t) {
			continue
		}
		if d, ok := byName[t]; ok {
			if f.Check(upstream, d) != Match {
				changed = append(changed, t)
			}
			f.Set(upstream, d)
		} else if f.Remove(upstream, t) {
			changed = append(changed, t)
		}
	}
	f.Record(upstream)
	return changed, nil
}
