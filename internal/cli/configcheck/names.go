package configcheck

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/inspect"
	"github.com/toolgate/toolgate/upstream"
)

// checkConfigNames reports what a serve config file names that is not
// there, as serve would meet it, without starting or connecting anything:
//
//   - a file or directory it names (the tokens file, the policy
//     directories, the capabilities, JWKS, bundle key and bundle token
//     files) that does not exist or is of the wrong kind: an error, serve
//     refuses to start;
//   - a ${VAR} of an upstream's url, headers, env or auth that is not set, or
//     a ${file:PATH} that cannot be read: an error, serve refuses to
//     start;
//   - a stdio upstream's command that is not on PATH (or, with a slash,
//     not an executable file): a warning, serve starts without that
//     upstream's tools.
//
// Findings name the key, the path, the variable or the command, never a
// value a reference resolves to. policies is the policy directory Check
// compiles (already reported when missing).
func checkConfigNames(path string, s *config.Serve, policies string, r *inspect.CheckReport) {
	at := func(key string) inspect.Finding {
		return inspect.Finding{Code: inspect.CodeConfigMissing, File: path, Field: key}
	}
	stat := func(key, p string, dir bool) {
		if p == "" {
			return
		}
		fi, err := os.Stat(p)
		kind := "file"
		if dir {
			kind = "directory"
		}
		switch {
		case errors.Is(err, fs.ErrNotExist):
			r.Errorf(at(key), "%s %s does not exist: serve refuses to start", kind, p)
		case err != nil:
			r.Errorf(at(key), "%s %s cannot be read (%v): serve refuses to start", kind, p, unwrapPath(err))
		case fi.IsDir() != dir:
			r.Errorf(at(key), "%s is not a %s: serve refuses to start", p, kind)
		}
	}
	stat("tokens", s.Tokens, false)
	if s.Policy != policies {
		stat("policy", s.Policy, true)
	}
	stat("capabilities", s.Capabilities, false)
	stat("shadow.policy", s.Shadow.Policy, true)
	stat("shadow.registry", s.Shadow.Registry, false)
	if j := s.Auth.JWKS; !strings.HasPrefix(j, "http://") && !strings.HasPrefix(j, "https://") {
		stat("auth.jwks", j, false)
	}
	stat("bundle.signing.key_file", s.Bundle.Signing.KeyFile, false)
	stat("bundle.credentials.bearer.token_path", s.Bundle.Credentials.Bearer.TokenPath, false)

	for i, u := range s.Upstreams {
		up := fmt.Sprintf("upstreams[%d] (%s)", i, u.Name)
		ref := func(key, v string) {
			if _, err := upstream.Expand(v, nil); err != nil {
				msg := strings.TrimPrefix(err.Error(), upstream.ErrSecret.Error()+": ")
				hint := "fix the reference"
				if strings.HasPrefix(msg, "environment variable") {
					hint = "set it in serve's environment"
				}
				r.Errorf(at(up+"."+key), "%s: serve refuses to start; %s", msg, hint)
			}
		}
		if u.URL != "" {
			ref("url", u.URL)
		}
		for _, k := range slices.Sorted(maps.Keys(u.Headers)) {
			ref("headers."+k, u.Headers[k])
		}
		for _, k := range slices.Sorted(maps.Keys(u.Env)) {
			ref("env."+k, u.Env[k])
		}
		if a := u.Auth; a != nil {
			ref("auth.token_url", a.TokenURL)
			ref("auth.client_id", a.ClientID)
			ref("auth.client_secret", a.ClientSecret)
			ref("auth.resource", a.Resource)
			ref("auth.audience", a.Audience)
			for j, sc := range a.Scopes {
				ref(fmt.Sprintf("auth.scopes[%d]", j), sc)
			}
		}
		if argv := u.Argv(); len(argv) > 0 {
			if _, err := exec.LookPath(argv[0]); err != nil {
				where := "on PATH"
				if strings.ContainsRune(argv[0], '/') {
					where = "an executable file"
				}
				r.Warnf(at(up+".command"), "command %q is not %s here: serve starts without this upstream and its tools; install it or give its full path", argv[0], where)
			}
		}
	}
}

// unwrapPath keeps the reason of a *fs.PathError without its path.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
