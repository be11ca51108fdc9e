// Package pinreview is the back end of `toolgate pins check` and `toolgate
// pins accept` (docs/contract.md §15): it connects to the pinned upstreams,
// compares their tools with the pins file (internal/pins) and records the
// definitions an operator accepts.
package pinreview

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/pins"
	"github.com/toolgate/toolgate/upstream"
)

// ErrNoPinnedUpstream is returned by Check and Accept when no
// upstream is configured with pin: true.
var ErrNoPinnedUpstream = errors.New("no upstream is configured with pin: true (and import: true)")

// Options are the settings of `toolgate pins check` and `toolgate pins
// accept`: serve's (upstreams, pins file), and where to write.
type Options struct {
	config.Serve
	// Stdout receives the report; Stderr the upstreams' stderr.
	Stdout io.Writer
	Stderr io.Writer
	// Logger receives connection failures; nil discards them.
	Logger *slog.Logger
}

// reviewed is one pinned upstream's current definitions.
type reviewed struct {
	name string
	defs []pins.Definition
}

// currentDefinitions connects to the pinned upstreams and lists their
// tools now; any upstream that cannot be listed is an error (a review that
// could not look is no review).
func currentDefinitions(ctx context.Context, o *Options) ([]reviewed, error) {
	var ups []upstream.Settings
	for _, u := range o.Upstreams {
		if u.Pin {
			ups = append(ups, u)
		}
	}
	if len(ups) == 0 {
		return nil, ErrNoPinnedUpstream
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	path, err := o.PinsFile()
	if err != nil {
		return nil, err
	}
	pool, err := upstream.NewPool(config.PoolConfigs(ups), &upstream.Options{Logger: log, Stderr: o.Stderr, Pins: path})
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	var (
		out  []reviewed
		errs []error
	)
	for _, name := range pool.Pinned() {
		tools, err := pool.ListTools(ctx, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		r := reviewed{name: name}
		for _, t := range tools {
			d, err := pins.Define(t)
			if err != nil {
				errs = append(errs, fmt.Errorf("upstream %s: %w", name, err))
				continue
			}
			r.defs = append(r.defs, d)
		}
		out = append(out, r)
	}
	return out, errors.Join(errs...)
}

// Check connects to the pinned upstreams, compares their tools with
// the pins file and writes every drifted, new, not yet recorded or gone
// tool with a unified diff of its pinned and current definition to
// o.Stdout. drift reports whether any listed tool is not served as listed
// (exit 1 for `toolgate pins check`). An upstream that cannot be listed,
// or a pins file that cannot be read, is an error.
func Check(ctx context.Context, o Options) (drift bool, err error) {
	cur, listErr := currentDefinitions(ctx, &o)
	if cur == nil && listErr != nil {
		return false, listErr
	}
	path, err := o.PinsFile()
	if err != nil {
		return false, err
	}
	f, err := pins.Load(path)
	if err != nil {
		return false, err
	}
	var all []pins.Finding
	for _, r := range cur {
		all = append(all, pins.Review(f, r.name, r.defs)...)
	}
	if err := pins.WriteReport(o.Stdout, all); err != nil {
		return false, err
	}
	for _, x := range all {
		drift = drift || x.Drift()
	}
	if !drift && listErr == nil {
		fmt.Fprintf(o.Stdout, "pins: every tool of %s matches its pin (%s)\n", strings.Join(names(cur), ", "), path)
	}
	return drift, listErr
}

func names(rs []reviewed) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.name)
	}
	return out
}

// Accept connects to the pinned upstreams and records the current
// definitions of the named tools (UPSTREAM.TOOL, the imported rows'
// names), or with all of every tool of every pinned upstream, in the pins
// file (written atomically). A name of no pinned upstream, or of a tool
// that is neither listed nor pinned, is an error and nothing is written.
func Accept(ctx context.Context, o Options, tools []string, all bool) error {
	if all == (len(tools) > 0) {
		return errors.New("give the tools to accept (UPSTREAM.TOOL ...) or --all, not both")
	}
	cur, err := currentDefinitions(ctx, &o)
	if err != nil {
		return err
	}
	byUpstream := map[string][]string{}
	for _, t := range tools {
		up, tool, ok := strings.Cut(t, ".")
		if !ok || !slices.ContainsFunc(cur, func(r reviewed) bool { return r.name == up }) {
			return fmt.Errorf("%s: not UPSTREAM.TOOL of an upstream configured with pin: true", t)
		}
		byUpstream[up] = append(byUpstream[up], tool)
	}
	path, err := o.PinsFile()
	if err != nil {
		return err
	}
	var (
		accepted  []string
		acceptErr error
	)
	_, err = pins.Update(path, func(f *pins.File) bool {
		accepted = nil
		for _, r := range cur {
			var names []string // nil: all
			if !all {
				if names = byUpstream[r.name]; names == nil {
					continue
				}
			}
			changed, aerr := pins.Accept(f, r.name, r.defs, names)
			if aerr != nil {
				acceptErr = aerr
				return false
			}
			for _, t := range changed {
				accepted = append(accepted, r.name+"."+t)
			}
		}
		return true
	})
	if err = errors.Join(acceptErr, err); err != nil {
		return err
	}
	if len(accepted) == 0 {
		fmt.Fprintf(o.Stdout, "pins: nothing changed (%s)\n", path)
		return nil
	}
	for _, t := range accepted {
		fmt.Fprintf(o.Stdout, "accepted: %s\n", t)
	}
	fmt.Fprintf(o.Stdout, "pins: %d written to %s\n", len(accepted), path)
	return nil
}
