package engine

import (
	"math"
	"sort"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/toolgate/toolgate/toolcall"
)

// Limit is one object of data.toolgate.call.limit (docs/contract.md §18,
// §20): a call is admitted only if the costs of the calls admitted with
// Key within the last Per, plus its own Cost, stay within Max (without a
// cost: fewer than Max calls); admitting it counts it under Key.
type Limit = toolcall.Limit

// readLimits reads the value of data.toolgate.call.limit: a set of
// objects {"key": non-empty string, "max": integer ≥ 1, "per": positive
// duration string, "reason": non-empty string}. Anything else, also an
// unknown member, is a type error (the call rules fail). The limits come
// out sorted by key, then max, then per.
func readLimits(v ast.Value) ([]Limit, error) {
	set, ok := v.(ast.Set)
	if !ok {
		return nil, typeError(refLimit, "limit must be a set of objects, got %s", ast.ValueName(v))
	}
	var (
		out []Limit
		err error
	)
	set.Foreach(func(t *ast.Term) {
		if err != nil {
			return
		}
		var l Limit
		l, err = readLimit(t.Value)
		out = append(out, l)
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := &out[i], &out[j]
		switch {
		case a.Key != b.Key:
			return a.Key < b.Key
		case a.Max != b.Max:
			return a.Max < b.Max
		case a.Per != b.Per:
			return a.Per < b.Per
		case a.Cost != b.Cost:
			return a.Cost < b.Cost
		}
		return a.Reason < b.Reason
	})
	// One call is counted once under a key, with one cost.
	for i := 1; i < len(out); i++ {
		if out[i].Key == out[i-1].Key && out[i].Weight() != out[i-1].Weight() {
			return nil, typeError(refLimit, "limits with key %q name different costs (%v and %v)",
				out[i].Key, out[i-1].Weight(), out[i].Weight())
		}
	}
	return out, nil
}

func readLimit(v ast.Value) (Limit, error) {
	obj, ok := v.(ast.Object)
	if !ok {
		return Limit{}, typeError(refLimit, "a limit must be an object, got %s %s", ast.ValueName(v), v)
	}
	var (
		l         Limit
		err       error
		maxNotInt bool
	)
	obj.Foreach(func(k, val *ast.Term) {
		if err != nil {
			return
		}
		key, _ := k.Value.(ast.String)
		switch key {
		case "key", "reason":
			s, ok := val.Value.(ast.String)
			if !ok || s == "" {
				err = typeError(refLimit, "limit.%s must be a non-empty string, got %s %s", key, ast.ValueName(val.Value), val.Value)
				return
			}
			if key == "key" {
				l.Key = string(s)
			} else {
				l.Reason = string(s)
			}
		case "max", "cost":
			n, ok := val.Value.(ast.Number)
			var f float64
			if ok {
				f, ok = n.Float64()
			}
			if !ok || !(f > 0) || math.IsInf(f, 0) {
				err = typeError(refLimit, "limit.%s must be a number > 0, got %s %s", key, ast.ValueName(val.Value), val.Value)
				return
			}
			if key == "cost" {
				l.Cost = f
				return
			}
			l.Max = f
			var i int64
			if i, ok = n.Int64(); !ok || i == math.MaxInt64 {
				maxNotInt = true
			}
		case "per":
			per, ok := positiveDuration(val.Value)
			if !ok {
				err = typeError(refLimit, "limit.per must be a positive duration string such as \"1m\" or \"24h\", got %s %s", ast.ValueName(val.Value), val.Value)
				return
			}
			l.Per = per
		default:
			err = typeError(refLimit, "a limit has an unknown member %s", k.Value)
		}
	})
	if err != nil {
		return Limit{}, err
	}
	if l.Key == "" || l.Max == 0 || l.Per == 0 || l.Reason == "" {
		return Limit{}, typeError(refLimit, "a limit needs key, max, per and reason, got %s", v)
	}
	if l.Cost == 0 && (maxNotInt || l.Max < 1) {
		// Without a cost a limit counts calls (§18).
		return Limit{}, typeError(refLimit, "limit.max must be an integer ≥ 1, got %s (a limit with a cost takes any number > 0)",
			obj.Get(ast.StringTerm("max")).Value)
	}
	return l, nil
}

// positiveDuration reads v as a duration string (time.ParseDuration's)
// above zero; false when it is not one.
func positiveDuration(v ast.Value) (time.Duration, bool) {
	s, ok := v.(ast.String)
	if !ok {
		return 0, false
	}
	d, err := time.ParseDuration(string(s))
	return d, err == nil && d > 0
}
