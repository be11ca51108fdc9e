// Package methods is what a registry row's method names: a Method binds
// validated arguments into an Invocation, and a Set resolves a row's method
// name to one. Map binds Go functions as methods by reflection; an upstream
// MCP server's tools are another Set (package upstream).
//
//	tools := methods.Map{}
//	tools.Register("shop.getReward", func(ctx context.Context, a struct {
//		IDReward int `json:"idReward"`
//	}) (Reward, error) {
//		return lookUpReward(ctx, a.IDReward)
//	})
//
// The adapter (package mcpadapter) validates the arguments against the row
// before it binds them; a value the method's parameter cannot hold is a
// *toolcall.ArgumentError. It imports no policy engine.
package methods
