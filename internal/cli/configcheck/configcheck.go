// Package configcheck is `toolgate check --config`: what a serve config
// file says wrong, names that are not there, and credentials written in it,
// as findings of the check report (internal/inspect). It reads the file
// through internal/config, so that the inspect library reads none.
package configcheck

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/inspect"
	"github.com/toolgate/toolgate/upstream"
)

// credentialWords make a header or variable name look like it holds a
// credential (compared case-insensitively).
var credentialWords = []string{"bearer", "token", "key", "secret", "authorization", "password"}

// LooksLikeCredential reports whether a header or environment variable
// named name with the value value looks like it holds a credential: its
// name contains Bearer, token, key, secret, authorization or password, or
// its value starts with "Bearer ".
func LooksLikeCredential(name, value string) bool {
	n := strings.ToLower(name)
	for _, w := range credentialWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return len(value) > 7 && strings.EqualFold(value[:7], "bearer ")
}

// File returns the check of the serve config file at path, for
// inspect.CheckOptions.Config.
func File(path string) inspect.ConfigCheck {
	return func(policies string, r *inspect.CheckReport) { checkConfig(path, policies, r) }
}

// checkConfig reports a serve config file's problems (errors, code
// config_invalid), its keys under a former name (warnings, code
// config_renamed) and every credential written into it as a literal
// (warnings, code credential_literal; docs/contract.md §17), then what
// the file names that is not there (checkConfigNames, code
// config_missing). It starts and connects to nothing. No finding holds a
// value of the file's headers, env or auth, nor what a reference in them
// resolves to.
func checkConfig(path, policies string, r *inspect.CheckReport) {
	s, renamed, err := config.LoadFileWarnings(path)
	if err == nil {
		err = s.Validate()
	}
	for _, p := range renamed {
		r.Warnf(inspect.Finding{Code: inspect.CodeConfigRenamed, File: path, Line: p.Line, Field: p.Key}, "%s", p.Message)
	}
	var ce *config.Error
	switch {
	case errors.As(err, &ce) && ce.Err == nil:
		for _, p := range ce.Problems {
			r.Errorf(inspect.Finding{Code: inspect.CodeConfigInvalid, File: path, Line: p.Line, Field: p.Key}, "%s", p.Message)
		}
	case err != nil:
		r.Errorf(inspect.Finding{Code: inspect.CodeConfigInvalid, File: path}, "%v", err)
	}
	if s == nil {
		return
	}
	checkURLCredentials(path, s, r)
	checkConfigNames(path, s, policies, r)
	for i, u := range s.Upstreams {
		at := fmt.Sprintf("upstreams[%d] (%s)", i, u.Name)
		lit := func(field string) {
			r.Warnf(inspect.Finding{Code: inspect.CodeCredentialLiteral, File: path, Field: at + "." + field},
				"written in the config file and looks like a credential: give it as ${VAR} or ${file:PATH}")
		}
		for _, k := range slices.Sorted(maps.Keys(u.Headers)) {
			if v := u.Headers[k]; !upstream.IsReference(v) && LooksLikeCredential(k, v) {
				lit("headers." + k)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(u.Env)) {
			if v := u.Env[k]; !upstream.IsReference(v) && LooksLikeCredential(k, v) {
				lit("env." + k)
			}
		}
		if a := u.Auth; a != nil && a.ClientSecret != "" && !upstream.IsReference(a.ClientSecret) {
			lit("auth.client_secret")
		}
	}
}
