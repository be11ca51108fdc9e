package engine

import (
	"strconv"

	"github.com/toolgate/toolgate/internal/lru"
)

// DefaultDecisionCacheSize bounds what a revision keeps per caller: at
// most this many memoised grant decisions and, for a policy evaluated
// split (one that reads the request, see [Revision.DecisionMode]), as
// many split residuals; past it, the least recently used caller's entry
// is dropped. An entry costs O(1) whatever the registry's size
// (docs/performance.md, Measurements): the values it refers to (an
// override set, a split's precomputed values) are kept once per revision
// for every caller with an equal value, and go with the last entry that
// holds them. See the package doc, Memory.
const DefaultDecisionCacheSize = 4096

// decisionCache memoises grant decisions per caller fingerprint for one
// revision (it is dropped with the revision). Only decisions that did not
// fail are stored.
type decisionCache = lru.Cache[*GrantDecision]

func newDecisionCache(max int) *decisionCache { return lru.New[*GrantDecision](max) }

func appendLenString(b []byte, s string) []byte {
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, ':')
	return append(b, s...)
}
