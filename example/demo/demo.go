// Package demo holds the demo tool methods of docs/contract.md §8, so that the bundled
// example, and anyone's registry, can be tried without writing Go.
//
//	methods := demo.Methods()
//	adapter := mcpadapter.New(mcpadapter.Options{Revisions: eng, Methods: methods})
package demo

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/toolgate/toolgate/methods"
)

// Money is the internal type of schema/types/Money.json.
type Money struct {
	Amount   string `json:"amount"`
	Currency string `json:"currency"`
}

// Reward is what demo.getReward returns.
type Reward struct {
	ID     int    `json:"idReward"`
	Name   string `json:"name"`
	Points int    `json:"points"`
	Note   string `json:"note,omitempty"`
}

// Methods returns a fresh set of the nine demo methods. Each set has its own
// counters (demo.count).
func Methods() methods.Map {
	m := methods.Map{}
	var (
		mu       sync.Mutex
		counters = map[string]int64{}
	)

	m.Register("demo.echo", func(_ context.Context, a struct {
		Text string `json:"text"`
	}) (string, error) {
		return a.Text, nil
	})
	m.Register("demo.add", func(_ context.Context, a struct {
		A int64 `json:"a"`
		B int64 `json:"b"`
	}) (string, error) {
		return strconv.FormatInt(a.A+a.B, 10), nil
	})
	m.Register("demo.getReward", func(_ context.Context, a struct {
		IDReward int    `json:"idReward"`
		Note     string `json:"note"`
	}) (Reward, error) {
		return Reward{ID: a.IDReward, Name: fmt.Sprintf("Reward %d", a.IDReward), Points: 10 * a.IDReward, Note: a.Note}, nil
	})
	m.Register("demo.price", func(_ context.Context, a struct {
		Price Money `json:"price"`
	}) (string, error) {
		return formatMoney(a.Price)
	})
	m.Register("demo.fail", func(context.Context, struct{}) (string, error) {
		return "", errors.New("open /var/lib/toolgate/demo/rewards.db: no such file or directory")
	})
	m.Register("demo.inner", func(_ context.Context, a struct {
		IDReward int `json:"idReward"`
	}) (string, error) {
		// The tool's own code calls an inner function without an argument it
		// needs: a failure inside the tool, not an argument problem, although
		// the parameter shares the tool argument's name.
		return lookupReward(map[string]any{"note": "inner"})
	})
	m.Register("demo.count", func(_ context.Context, a struct {
		Key string `json:"key"`
	}) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		counters[a.Key]++
		return strconv.FormatInt(counters[a.Key], 10), nil
	})
	m.Register("demo.sleep", func(ctx context.Context, a struct {
		MS int64 `json:"ms"`
	}) (string, error) {
		t := time.NewTimer(time.Duration(a.MS) * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
			return strconv.FormatInt(a.MS, 10), nil
		case <-ctx.Done():
			return "", fmt.Errorf("demo.sleep: %w", ctx.Err())
		}
	})
	m.Register("demo.execUrl", func(_ context.Context, a struct {
		URL string `json:"url"`
	}) (string, error) {
		return a.URL, nil
	})
	return m
}

// lookupReward is demo.inner's inner function: it needs idReward.
func lookupReward(args map[string]any) (string, error) {
	id, ok := args["idReward"]
	if !ok {
		return "", errors.New("lookupReward: missing required argument 'idReward'")
	}
	return fmt.Sprint(id), nil
}

// formatMoney renders an amount with two decimals and its currency.
func formatMoney(m Money) (string, error) {
	whole, frac, _ := cutDot(m.Amount)
	if whole == "" || whole == "-" {
		return "", fmt.Errorf("demo.price: malformed amount %q", m.Amount)
	}
	for len(frac) < 2 {
		frac += "0"
	}
	return fmt.Sprintf("%s.%s %s", whole, frac, m.Currency), nil
}

func cutDot(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}
