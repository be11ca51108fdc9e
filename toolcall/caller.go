package toolcall

// Caller is who a call is made on behalf of. A nil *Caller is nobody: no
// tool is granted and no policy is asked.
type Caller struct {
	Subject string         `json:"subject"`
	Roles   []string       `json:"roles"`
	Claims  map[string]any `json:"claims"`
}
