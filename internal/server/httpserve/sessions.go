package httpserve

import (
	"context"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessions keeps account of the MCP sessions of a Server: who opened each
// (its owner) and how many are alive, for the cap.
type sessions struct {
	max       int // <0: no cap
	maxNobody int // sessions nobody may hold; <0: no cap

	mu            sync.Mutex
	owners        map[string]string // session id → owner (principal.owner)
	opening       int               // requests that may open a session, running
	nobody        int               // of owners, those of nobody
	openingNobody int               // of opening, those of nobody
}

// The share of Options.MaxSessions that sessions opened by nobody may
// hold: anonymous callers never fill the cap for signed-in ones.
const nobodySessionShareNum, nobodySessionShareDen = 1, 4

func (ss *sessions) count() int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return len(ss.owners) + ss.opening
}

// gate checks a request's session before its body is read: a request on a
// session must come from the session's owner (else 403); a request that
// may open a session (a POST without one, to the stateful handler) needs a
// free place under the cap (else 503). stateful is false when the handler
// keeps no sessions.
func (ss *sessions) gate(stateful bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !stateful {
			next.ServeHTTP(w, r)
			return
		}
		owner := "" // nobody
		if info := auth.TokenInfoFromContext(r.Context()); info != nil {
			owner = info.UserID
		}
		if id := r.Header.Get("Mcp-Session-Id"); id != "" {
			ss.mu.Lock()
			o, known := ss.owners[id]
			ss.mu.Unlock()
			// An unknown id goes on: the SDK answers 404.
			if known && o != owner {
				http.Error(w, "Forbidden: the session belongs to another caller", http.StatusForbidden)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		if r.Method != http.MethodPost || r.Header.Get("Mcp-Protocol-Version") >= sessionlessRevision {
			next.ServeHTTP(w, r)
			return
		}
		nobody := 0
		if owner == "" {
			nobody = 1
		}
		ss.mu.Lock()
		full := ss.max >= 0 && len(ss.owners)+ss.opening >= ss.max
		if nobody == 1 && ss.maxNobody >= 0 && ss.nobody+ss.openingNobody >= ss.maxNobody {
			full = true
		}
		if full {
			ss.mu.Unlock()
			w.Header().Set("Retry-After", "60")
			http.Error(w, "too many sessions", http.StatusServiceUnavailable)
			return
		}
		ss.opening++
		ss.openingNobody += nobody
		ss.mu.Unlock()
		defer func() {
			ss.mu.Lock()
			ss.opening--
			ss.openingNobody -= nobody
			ss.mu.Unlock()
		}()
		next.ServeHTTP(w, r)
	})
}

// track is receiving middleware: a session that initializes is recorded
// with its owner, the caller of the initialize request, until it closes.
func (ss *sessions) track(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method != "initialize" || err != nil {
			return res, err
		}
		sess, ok := req.GetSession().(*mcp.ServerSession)
		if !ok || sess == nil || sess.ID() == "" {
			return res, err // a sessionless request, or not over HTTP
		}
		id := sess.ID()
		ss.mu.Lock()
		if ss.owners == nil {
			ss.owners = map[string]string{}
		}
		_, again := ss.owners[id]
		owner := ownerOf(req)
		if !again {
			ss.owners[id] = owner
			if owner == "" {
				ss.nobody++
			}
		}
		ss.mu.Unlock()
		if !again {
			go func() {
				_ = sess.Wait()
				ss.mu.Lock()
				delete(ss.owners, id)
				if owner == "" {
					ss.nobody--
				}
				ss.mu.Unlock()
			}()
		}
		return res, err
	}
}

// ownerOf is the owner key (principal.owner) of a request's caller: ""
// for nobody.
func ownerOf(req mcp.Request) string {
	extra := req.GetExtra()
	if extra == nil || extra.TokenInfo == nil {
		return ""
	}
	return extra.TokenInfo.UserID
}
