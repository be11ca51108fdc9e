package mcpadapter

import "fmt"

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
// text is rendered from its fields (SPEC §5), never from Err, which keeps
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
		return fmt.Sprintf("Error: Missing required argument '%s'.", e.Name)
	case ArgInvalid:
		if e.Internal {
			return fmt.Sprintf("Error: Invalid value for argument '%s'.", e.Name)
		}
		return fmt.Sprintf("Error: Invalid value for argument '%s': expected %s.", e.Name, e.Type)
	case ArgUnknown:
		return fmt.Sprintf("Error: Unknown argument '%s'.", e.Name)
	}
	return msgInternal
}

func (e *ArgumentError) Error() string {
	if e.Err != nil {
		return e.Message() + " (" + e.Err.Error() + ")"
	}
	return e.Message()
}

func (e *ArgumentError) Unwrap() error { return e.Err }
