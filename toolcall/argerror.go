package toolcall

import (
	"encoding/json"
	"fmt"
)

// AnswerInternal is the answer to a call whose before hook, toolgate.call
// rule or method failed, or whose arguments could not be bound for another
// reason than an argument's (docs/contract.md §5).
const AnswerInternal = "Error: An internal error occurred while executing the tool."

// Arg is one argument bound for a method: a declared argument's name and its
// validated JSON value (sent or defaulted).
type Arg struct {
	Name  string
	Value json.RawMessage
}

// ArgumentProblem says what is wrong with an argument.
type ArgumentProblem int

const (
	// ArgMissing: a required argument was not sent.
	ArgMissing ArgumentProblem = iota + 1
	// ArgInvalid: a value the argument cannot take.
	ArgInvalid
	// ArgUnknown: the row declares an argument the method does not have.
	ArgUnknown
)

// ArgumentError is a failure to bind a call to its method. The caller's
// text is rendered from its fields (docs/contract.md §5), never from Err, which keeps
// the validator's or decoder's detail for the log.
type ArgumentError struct {
	Problem ArgumentProblem
	// Name is the argument's name as the row declares it.
	Name string
	// Type is the row's declared type.
	Type string
	// Internal reports that Type names an internal type (its name is then
	// not shown to the caller).
	Internal bool
	// Err is the underlying failure, for logs only.
	Err error
}

// Message is the exact answer the caller receives.
func (e *ArgumentError) Message() string {
	switch e.Problem {
	case ArgMissing:
		return answerMissingArgument(e.Name)
	case ArgInvalid:
		if e.Internal {
			return answerInvalidInternalArgument(e.Name)
		}
		return answerInvalidArgument(e.Name, e.Type)
	case ArgUnknown:
		return answerUnknownArgument(e.Name)
	}
	return AnswerInternal
}

func (e *ArgumentError) Error() string {
	if e.Err != nil {
		return e.Message() + " (" + e.Err.Error() + ")"
	}
	return e.Message()
}

func (e *ArgumentError) Unwrap() error { return e.Err }

// The argument answers of docs/contract.md §5, rendered by ArgumentError.Message.
func answerMissingArgument(name string) string {
	return fmt.Sprintf("Error: Missing required argument '%s'.", name)
}

func answerInvalidArgument(name, typ string) string {
	return fmt.Sprintf("Error: Invalid value for argument '%s': expected %s.", name, typ)
}

func answerInvalidInternalArgument(name string) string {
	return fmt.Sprintf("Error: Invalid value for argument '%s'.", name)
}

func answerUnknownArgument(name string) string {
	return fmt.Sprintf("Error: Unknown argument '%s'.", name)
}
