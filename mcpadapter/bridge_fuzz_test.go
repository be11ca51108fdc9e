package mcpadapter

import (
	"testing"
	"time"
)

// FuzzRequestStateOpens: a requestState is what a client sends back, so
// anyone may send any string. Only the exact state toolgate sealed, for
// the binding it was sealed for, opens; anything else is refused without
// a panic.
func FuzzRequestStateOpens(f *testing.F) {
	var b bridges
	b.init()
	bind := stateBinding{owner: "token:alice", tool: "echo", args: "sha256:0"}
	sealed := b.seal(bind, openedState{kind: stateRound, id: 7, round: 2}, time.Now().Add(time.Hour))
	f.Add(sealed, bind.owner, bind.tool, bind.args)
	f.Add(sealed+"A", bind.owner, bind.tool, bind.args)
	f.Add(sealed, "token:bob", bind.tool, bind.args)
	f.Add(statePrefix, "", "", "")
	f.Add("tg1.____", bind.owner, bind.tool, bind.args)
	f.Fuzz(func(t *testing.T, state, owner, tool, args string) {
		got := stateBinding{owner: owner, tool: tool, args: args}
		st, err := b.open(got, state)
		if err != nil {
			return
		}
		if state != sealed || got != bind {
			t.Fatalf("opened a state toolgate did not seal for this binding: %q for %+v", state, got)
		}
		if st.kind != stateRound || st.id != 7 || st.round != 2 {
			t.Fatalf("opened %+v", st)
		}
	})
}
