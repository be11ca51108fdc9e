package console

import (
	"embed"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
)

// The page and its plain JavaScript modules, embedded: the console needs
// no network and no build step at run time.
//
//go:embed assets
var assetFS embed.FS

// Assets returns the console's files (index.html, *.js, *.css).
func Assets() fs.FS {
	sub, err := fs.Sub(assetFS, "assets")
	if err != nil {
		panic("console: embedded assets missing: " + err.Error()) // a build mistake
	}
	return sub
}

// assets serves the embedded files under /console/ with a content
// security policy that allows only the console's own scripts and styles,
// and connections to the console's origin and, for sign-in, the issuer's.
func (c *Console) assets() http.Handler {
	files := http.StripPrefix(Prefix+"/", http.FileServerFS(Assets()))
	connect := "'self'"
	if c.opts.OAuth != nil {
		if u, err := url.Parse(c.opts.OAuth.Issuer); err == nil && u.Scheme != "" && u.Host != "" {
			connect += " " + u.Scheme + "://" + u.Host
		}
	}
	csp := strings.Join([]string{
		"default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:",
		"connect-src " + connect, "base-uri 'none'", "form-action 'self'", "frame-ancestors 'none'",
	}, "; ")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Security-Policy", csp)
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}
