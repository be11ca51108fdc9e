package upstream

import (
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTokenEndpointEchoes (threat T7): a token endpoint that refuses and
// echoes what it was sent — the Basic header, its base64, the form body,
// the body's base64 — in its error code and description: the error
// toolgate logs and audits holds the client secret (and the subject token)
// in none of the encodings toolgate sent it in, for both grants.
func TestTokenEndpointEchoes(t *testing.T) {
	t.Parallel()
	const secret = "s3cr+t/UPSTREAM=9f1c&2e é" // changed by form encoding
	const subject = "SUBJ.eyJzdWIiOiJhbGljZSJ9.sig-" + secretValue
	echoes := map[string]func(r *http.Request, body string) (code, desc string){
		"header": func(r *http.Request, _ string) (string, string) {
			return "invalid_client", r.Header.Get("Authorization")
		},
		"header in the code": func(r *http.Request, _ string) (string, string) { return r.Header.Get("Authorization"), "" },
		"header's base64": func(r *http.Request, _ string) (string, string) {
			return "invalid_client", "saw " + base64.StdEncoding.EncodeToString([]byte(r.Header.Get("Authorization")))
		},
		"credentials decoded": func(r *http.Request, _ string) (string, string) {
			id, pw, _ := r.BasicAuth()
			return "invalid_client", "client " + id + " with " + pw
		},
		"body": func(_ *http.Request, body string) (string, string) { return "invalid_request", "body " + body },
		"body's base64": func(_ *http.Request, body string) (string, string) {
			return "invalid_request", base64.URLEncoding.EncodeToString([]byte("x" + body))
		},
	}
	for name, echo := range echoes {
		ts, _ := tokenEndpoint(t, func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			code, desc := echo(r, string(b))
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":%q,"error_description":%q}`, code, desc)
		})
		for _, grant := range []string{AuthTokenExchange, AuthClientCredentials} {
			a := &Auth{Type: grant, TokenURL: ts.URL, ClientID: "gw app", ClientSecret: secret, Audience: "up"}
			var err error
			if grant == AuthTokenExchange {
				_, err = ExchangeToken(t.Context(), ts.Client(), "up", a, subject)
			} else {
				_, err = newClientCredentials("up", a, ts.Client()).get(t.Context(), "")
			}
			require.ErrorIs(t, err, ErrCredentials, "%s, %s", name, grant)
			got := err.Error()
			require.Contains(t, got, "HTTP 400", "%s, %s", name, grant)
			basic := base64.StdEncoding.EncodeToString([]byte(url.QueryEscape("gw app") + ":" + url.QueryEscape(secret)))
			for what, form := range map[string]string{
				"secret": secret, "form-encoded secret": url.QueryEscape(secret), "Basic value": basic,
				"subject token": subject, "form-encoded subject token": url.QueryEscape(subject),
				"a run of the secret's base64": base64.StdEncoding.EncodeToString([]byte(secret))[4:16],
			} {
				require.NotContains(t, got, form, "%s, %s: the %s in %q", name, grant, what, got)
			}
			for _, part := range []string{"s3cr", "UPSTREAM=9f1c", "UPSTREAM%3D9f1c"} {
				require.NotContains(t, got, part, "%s, %s: %q", name, grant, got)
			}
		}
	}
	// What is not an echo stays: the code and description of a refusal.
	ts, _ := tokenEndpoint(t, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":"invalid_grant","error_description":"exchange not permitted for this subject"}`)
	})
	_, err := ExchangeToken(t.Context(), ts.Client(), "up", &Auth{TokenURL: ts.URL, ClientID: "gw", ClientSecret: secret, Audience: "up"}, subject)
	require.EqualError(t, err, "upstream up: token exchange refused by the token endpoint: HTTP 400 invalid_grant: exchange not permitted for this subject")
}
