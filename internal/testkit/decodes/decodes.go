// Package decodes counts the go-sdk's JSON decodes in this process: every
// Unmarshal of the SDK's internal/json goes through a streaming
// segmentio/encoding json.Decoder, which allocates a fresh 32 KiB read
// buffer for the value it decodes. Counting those buffers counts the
// decodes, and says whose code asked for each.
//
// The counts come from the runtime's heap profile, so [Start] sets
// runtime.MemProfileRate to 1 (every allocation recorded) for the rest of
// the process: use it only in tests and benchmarks that measure this.
//
//	decodes.Start()
//	before := decodes.Take()
//	... one relayed call ...
//	n := decodes.Take().Sub(before).Total() // the decodes of that call
package decodes

import (
	"runtime"
	"slices"
	"strings"
)

// bufferFrame is the function that allocates the decoder's buffer.
const bufferFrame = "github.com/segmentio/encoding/json.(*Decoder).readValue"

// bufferSize is the buffer's first size (segmentio's minBufferSize).
const bufferSize = 32 << 10

// Start records every allocation from now on. Call it before the work to
// count, as early as possible (the profile holds only what was allocated
// after).
func Start() { runtime.MemProfileRate = 1 }

// Counts is the number of decoder buffers allocated so far, by the
// call path that asked for them (see [Counts.By]).
type Counts map[string]int64

// Take reads the heap profile after two collections (a profile is as of
// the last completed one) and returns the decoder buffers allocated so
// far, keyed by their stacks, outermost last, one function per line.
func Take() Counts {
	runtime.GC()
	runtime.GC()
	var recs []runtime.MemProfileRecord
	for {
		n, ok := runtime.MemProfile(recs, true)
		if ok {
			recs = recs[:n]
			break
		}
		recs = make([]runtime.MemProfileRecord, n+64)
	}
	out := Counts{}
	for _, r := range recs {
		if r.AllocObjects == 0 || r.AllocBytes/r.AllocObjects < bufferSize {
			continue
		}
		stack := stackOf(r.Stack())
		if !strings.Contains(stack, bufferFrame) {
			continue
		}
		out[stack] += r.AllocObjects
	}
	return out
}

// stackOf writes pcs as function names, one a line.
func stackOf(pcs []uintptr) string {
	var b strings.Builder
	frames := runtime.CallersFrames(pcs)
	for {
		f, more := frames.Next()
		b.WriteString(f.Function)
		b.WriteByte('\n')
		if !more {
			return b.String()
		}
	}
}

// Sub is c minus before, stack by stack (stacks that did not grow left out).
func (c Counts) Sub(before Counts) Counts {
	out := Counts{}
	for k, v := range c {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// Total is the number of decodes in c.
func (c Counts) Total() int64 {
	var n int64
	for _, v := range c {
		n += v
	}
	return n
}

// By groups c by who asked for each decode: the first function of each
// stack (counting from the innermost) outside the packages whose path
// starts with one of within, joined with " → " to the function it called
// (the way in); "" when every function is within.
func (c Counts) By(within ...string) map[string]int64 {
	out := map[string]int64{}
	for stack, v := range c {
		key, inner := "", ""
		for fn := range strings.SplitSeq(strings.TrimSuffix(stack, "\n"), "\n") {
			if !hasAnyPrefix(fn, within) {
				key = fn + " → " + inner
				break
			}
			inner = fn
		}
		out[key] += v
	}
	return out
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// Sorted lists m's keys by count, largest first, then by key.
func Sorted(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if m[a] != m[b] {
			if m[a] > m[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	return keys
}
