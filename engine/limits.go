package engine

import (
	"math"
	"sort"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
)

// Limit is one object of data.toolgate.call.limit (docs/contract.md §18): a call is
// admitted only if fewer than Max calls with Key were admitted within the
// last Per; admitting it counts it under Key.
type Limit struct {
	// Key names the counter; the policy chooses it (per subject, per tool,
	// per tenant claim, per argument value...). Never empty.
	Key string `json:"key"`
	// Max is how many calls Per admits; at least 1.
	Max int64 `json:"max"`
	// Per is the sliding window; positive.
	Per time.Duration `json:"per"`
	// Reason is shown to a caller the limit refuses. Never empty.
	Reason string `json:"reason"`
	// Rules are the rules that defined the limit.
	Rules []Location `json:"rules,omitempty"`
}

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
		}
		return a.Reason < b.Reason
	})
	return out, nil
}

func readLimit(v ast.Value) (Limit, error) {
	obj, ok := v.(ast.Object)
	if !ok {
		return Limit{}, typeError(refLimit, "a limit must be an object, got %s %s", ast.ValueName(v), v)
	}
	var (
		l   Limit
		err error
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
		case "max":
			n, ok := val.Value.(ast.Number)
			var i int64
			if ok {
				i, ok = n.Int64()
			}
			if !ok || i < 1 || i == math.MaxInt64 {
				err = typeError(refLimit, "limit.max must be an integer ≥ 1, got %s %s", ast.ValueName(val.Value), val.Value)
				return
			}
			l.Max = i
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
