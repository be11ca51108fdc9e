package toolcall

// Stage is the step of docs/contract.md §5 at which a tools/call was decided. Its
// values are the words `toolgate explain` prints.
type Stage string

// The stages, in the order of docs/contract.md §5.
const (
	StageNameRequired Stage = "name_required" // step 1: no usable name
	StageNobody       Stage = "nobody"        // step 2: nobody signed in: Unknown tool
	StageNotVerified  Stage = "not_verified"  // step 3: the grant decision failed
	StageUnknown      Stage = "unknown_tool"  // step 4: hidden, or no row has the name
	StageHookFailed   Stage = "hook_failed"   // step 5: a before hook, the approval store or the confirmation failed
	StageRuleFailed   Stage = "rule_failed"   // step 5: the toolgate.call rules failed
	StageDenied       Stage = "denied"        // step 5: refused with reasons (hooks, rules, a refused approval, an unconfirmed call)
	StageHeld         Stage = "held"          // step 5: an approval rule holds the call until a person approves it (docs/contract.md §13)
	StageLimited      Stage = "limited"       // step 5: a rate limit or quota refuses the call (docs/contract.md §18)
	StageAnswered     Stage = "answered"      // step 5: a hook, a rule or the confirmation answered instead of the method
	StageArguments    Stage = "arguments"     // step 6: the arguments could not be bound to the method
	StageRun          Stage = "run"           // steps 6-7: the arguments were bound and the method ran (a dry run: would run)
	StageWithheld     Stage = "withheld"      // after step 7: a result rule withheld the method's result (docs/contract.md §18)
	StageResultFailed Stage = "result_failed" // after step 7: the result rules failed, or the result was too large for them: withheld
)

// Outcome names how a call ended, as the audit trail and the metrics write
// it. (The engine's Outcome is the grant decision's: no override, override,
// failed, nobody.)
type Outcome string

const (
	// OutcomeResult: the method ran and returned a result (which may carry
	// isError, as an upstream's does).
	OutcomeResult Outcome = "result"
	// OutcomeAnswered: a before hook or a toolgate.call rule answered.
	OutcomeAnswered Outcome = "answered"
	// OutcomeDenied: a before hook or a toolgate.call rule refused.
	OutcomeDenied Outcome = "denied"
	// OutcomeFailed: a before hook, the argument binding or the method failed.
	OutcomeFailed Outcome = "failed"
	// OutcomeRefusedGate: the grant decision failed (step 3).
	OutcomeRefusedGate Outcome = "refused_gate"
	// OutcomeHeld: an approval rule holds the call until a person approves
	// it (docs/contract.md §13).
	OutcomeHeld Outcome = "held"
	// OutcomeLimited: a rate limit or quota refused the call (docs/contract.md
	// §18).
	OutcomeLimited Outcome = "limited"
	// OutcomeWithheld: a result rule withheld the method's result
	// (docs/contract.md §18).
	OutcomeWithheld Outcome = "withheld"
)

// Outcomes are every Outcome, for those who keep a series per outcome.
var Outcomes = []Outcome{OutcomeResult, OutcomeAnswered, OutcomeDenied, OutcomeFailed, OutcomeRefusedGate, OutcomeHeld, OutcomeLimited, OutcomeWithheld}

// Who answered a call: Answerer.Kind.
const (
	ByGate         = "gate"         // steps 1 to 4: toolgate's own answer
	ByHook         = "hook"         // a before hook (Answerer.Name); the ledger is one
	ByRule         = "rule"         // a toolgate.call rule (Answerer.Rules)
	ByApproval     = "approval"     // the approval step (docs/contract.md §13)
	ByConfirmation = "confirmation" // the user's confirmation (docs/contract.md §13)
	ByLimit        = "limit"        // the rate limits (docs/contract.md §18)
	ByResultRule   = "result_rule"  // the result rules (docs/contract.md §18)
	ByBinding      = "binding"      // the argument binding (step 6)
	ByMethod       = "method"       // the row's method (Answerer.Name)
)
