package upstream

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/pins"
)

// pinning reports whether any upstream is configured with Pin.
func (p *Pool) pinning() bool {
	for _, name := range p.order {
		if p.conns[name].cfg.Pin {
			return true
		}
	}
	return false
}

// recordFirst reads the pins file and records the definitions of each
// pinned upstream listed for the first time (the file does not name it
// yet); it returns the file as it then is.
func (p *Pool) recordFirst(listings [][]*mcp.Tool) (*pins.File, error) {
	f, err := pins.Load(p.opts.Pins)
	if err != nil {
		return nil, err
	}
	first := map[string][]pins.Definition{}
	for i, name := range p.order {
		if !p.conns[name].cfg.Pin || listings[i] == nil || f.Recorded(name) {
			continue
		}
		defs := []pins.Definition{}
		for _, t := range listings[i] {
			d, err := pins.Define(t)
			if err != nil {
				p.log.Warn("upstream: pins: a definition cannot be canonicalised; the tool is not served",
					slog.String("upstream", name), slog.String("tool", t.Name), slog.Any("error", err))
				continue
			}
			defs = append(defs, d)
		}
		first[name] = defs
	}
	if len(first) == 0 {
		return f, nil
	}
	recorded := []string{}
	f, err = pins.Update(p.opts.Pins, func(f *pins.File) bool {
		for name, defs := range first {
			if f.Recorded(name) {
				continue // recorded meanwhile (toolgate pins accept): that decides
			}
			f.Record(name)
			for _, d := range defs {
				f.Set(name, d)
			}
			recorded = append(recorded, name)
		}
		return len(recorded) > 0
	})
	if err != nil {
		return nil, fmt.Errorf("recording the first import: %w", err)
	}
	for _, name := range recorded {
		p.log.Info("upstream: pins: first import recorded", slog.String("upstream", name),
			slog.Int("tools", len(first[name])), slog.String("pins", p.opts.Pins))
	}
	return f, nil
}

// pinned returns the tools of a pinned upstream whose definition matches
// its pin; the others are logged and reported once per definition.
func (p *Pool) pinned(name string, tools []*mcp.Tool, f *pins.File) []*mcp.Tool {
	var (
		kept   []*mcp.Tool
		order  []string              // the tools left out, in the upstream's order
		hidden = map[string]string{} // tool → its definition's hash
	)
	for _, t := range tools {
		d, err := pins.Define(t)
		switch {
		case err != nil:
			// Logged by recordFirst on a first import; never served.
			hidden[t.Name] = "not canonicalisable"
		case f.Check(name, d) == pins.Match:
			kept = append(kept, t)
			continue
		default: // drifted, new, or unrecorded (the first import could not run)
			hidden[t.Name] = d.SHA256
		}
		order = append(order, t.Name)
	}

	p.driftMu.Lock()
	defer p.driftMu.Unlock()
	if p.drift == nil {
		p.drift = map[string]map[string]string{}
	}
	prev := p.drift[name]
	for _, tool := range order {
		sum := hidden[tool]
		if prev[tool] == sum {
			continue
		}
		pin, ok := f.Pin(name, tool)
		what := "upstream: pins: a tool's definition no longer matches its pin; it is not served (toolgate pins check shows the change)"
		if !ok {
			what = "upstream: pins: a new tool has no pin; it is not served (toolgate pins check shows it)"
		}
		p.log.Warn(what, slog.String("upstream", name), slog.String("tool", tool),
			slog.String("pinned_sha256", pin.SHA256), slog.String("sha256", sum))
		if p.opts.OnDrift != nil {
			p.opts.OnDrift(name, tool)
		}
	}
	for tool := range prev {
		if _, still := hidden[tool]; !still {
			p.log.Info("upstream: pins: a tool matches its pin again, or is gone; it is no longer reported", slog.String("upstream", name), slog.String("tool", tool))
		}
	}
	p.drift[name] = hidden
	return kept
}

// Pinned returns the names of the upstreams configured with Pin, in
// configuration order.
func (p *Pool) Pinned() []string {
	var out []string
	for _, name := range p.order {
		if p.conns[name].cfg.Pin {
			out = append(out, name)
		}
	}
	return out
}

// ListTools asks the upstream server for its tools now (a fresh
// tools/list, not the last listing kept), within its Timeout. It is what
// a review of the pins compares.
func (p *Pool) ListTools(ctx context.Context, server string) ([]*mcp.Tool, error) {
	c, ok := p.conns[server]
	if !ok {
		return nil, fmt.Errorf("upstream %s: not configured", server)
	}
	ctx, cancel := c.requestContext(ctx)
	defer cancel()
	s, err := c.session(ctx)
	if err != nil {
		return nil, fmt.Errorf("upstream %s: %w", server, err)
	}
	l, err := listTools(ctx, s.cs)
	if err != nil {
		c.failed(ctx, s, err)
		return nil, fmt.Errorf("upstream %s: tools/list: %w", server, err)
	}
	return l.tools, nil
}
