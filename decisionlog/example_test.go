package decisionlog_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/decisionlog"
)

func ExampleLogger() {
	sink := &memSink{}
	l := decisionlog.New(sink, decisionlog.Options{Labels: map[string]string{"id": "replica-1"}})
	l.Log(decisionlog.Decision{
		ID: "d-1", Path: decisionlog.PathCall, Time: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC),
		Subject: "alice", Method: "tools/call", Tool: "getReward",
		Arguments: json.RawMessage(`{"idReward":7}`),
		Result:    map[string]any{"outcome": "result"},
	})
	_ = l.Close(context.Background())
	fmt.Println(string(sink.events[0]))
	// Output:
	// {"labels":{"id":"replica-1"},"decision_id":"d-1","path":"toolgate/call","input":{"caller":{"roles":[],"subject":"alice"},"request":{"arguments":{"idReward":"7902699be42c8a8e46fbbb4501726517e86b22c56a189f7625a6da49081b2451"},"arguments_sha256":"191cc4f65632c937c5d62a985bcee2eea37a148a226fbded5489d57bdbcb1696","meta":{},"method":"tools/call","tool":"getReward"}},"result":{"outcome":"result"},"timestamp":"2026-12-01T12:00:00Z"}
}
