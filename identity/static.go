package identity

import "github.com/toolgate/toolgate/toolcall"

// Static is the caller source of a stdio server (`toolgate serve --stdio
// --as SUBJECT --role ROLE`): one caller for every request, with subject
// and a copy of roles, and no claims; nil (nobody) when subject is "".
func Static(subject string, roles []string) *toolcall.Caller {
	if subject == "" {
		return nil
	}
	return &toolcall.Caller{Subject: subject, Roles: append([]string{}, roles...)}
}
