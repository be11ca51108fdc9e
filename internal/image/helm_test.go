package image_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/testkit/proctest"
)

// EnvHelm names the helm binary the chart tests run: Helm's own CLI at
// the version scripts/setup pins (go install helm.sh/helm/v3/cmd/helm@...).
const EnvHelm = "TOOLGATE_HELM"

// chart is the Helm chart, from this directory.
var chart = filepath.Join(proctest.Root, "deploy", "helm", "toolgate")

// helm is the helm binary; without one the test skips, except under CI,
// where it fails.
func helm(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs helm; skipped with -short")
	}
	bin := os.Getenv(EnvHelm)
	if bin == "" {
		const why = EnvHelm + " is not set: the Helm chart tests need helm (scripts/setup builds the pinned one with TOOLGATE_SETUP_HELM=1 or under CI)"
		if os.Getenv("CI") != "" {
			t.Fatal(why + "; CI is set, so this is a failure")
		}
		t.Skip(why)
	}
	return bin
}

// runHelm runs helm with args and returns its stdout; it fails the test
// when helm fails.
func runHelm(t *testing.T, bin string, args ...string) string {
	t.Helper()
	out, err := helmOutput(t, bin, args...)
	require.NoError(t, err, "helm %s:\n%s", strings.Join(args, " "), out)
	return out
}

func helmOutput(t *testing.T, bin string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	home := t.TempDir() // no user configuration, no repositories
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String() + stderr.String(), err
	}
	return stdout.String(), nil
}

// TestHelmChart renders the chart with helm and checks the output as the
// plain manifest is checked (the serve arguments through toolgate's own
// flag parser, probes, volumes, the Secret's settings file), for the
// default values and for an issuer, more replicas and a pinned tag; the
// chart passes helm lint --strict, names the project's image, and refuses
// to render without a bundle.
func TestHelmChart(t *testing.T) {
	bin := helm(t)
	t.Parallel()
	out := runHelm(t, bin, "lint", "--strict", chart)
	require.Contains(t, out, "0 chart(s) failed")

	c := checkManifest(t, decode(t, strings.NewReader(runHelm(t, bin, "template", "toolgate", chart))), 2)
	require.Equal(t, "ghcr.io/toolgate/toolgate:latest", c.Image)

	c = checkManifest(t, decode(t, strings.NewReader(runHelm(t, bin, "template", "gw", chart,
		"--set", "replicaCount=3", "--set", "image.tag=v1.2.3",
		"--set", "issuer.url=https://issuer.example.com", "--set", "issuer.resource=https://mcp.example.com/mcp",
		"--set", "issuer.audience={a,b}", "--set", "extraArgs={--max-sessions=5000}"))), 3)
	require.Equal(t, "ghcr.io/toolgate/toolgate:v1.2.3", c.Image)
	for _, a := range []string{"--issuer=https://issuer.example.com", "--resource=https://mcp.example.com/mcp",
		"--audience=a", "--audience=b", "--max-sessions=5000"} {
		require.Contains(t, c.Args, a)
	}

	// The ledger DSN from an existing Secret: the chart makes none and
	// mounts that one.
	objs := decode(t, strings.NewReader(runHelm(t, bin, "template", "toolgate", chart, "--set", "ledger.existingSecret=my-ledger")))
	require.NotContains(t, objs, "Secret")
	var d struct {
		Template struct {
			Spec struct {
				Volumes []struct {
					Name   string `yaml:"name"`
					Secret *struct {
						SecretName string `yaml:"secretName"`
					} `yaml:"secret"`
				} `yaml:"volumes"`
			} `yaml:"spec"`
		} `yaml:"template"`
	}
	dep := objs["Deployment"]
	require.NoError(t, dep.Spec.Decode(&d))
	var secrets []string
	for _, v := range d.Template.Spec.Volumes {
		if v.Secret != nil {
			secrets = append(secrets, v.Secret.SecretName)
		}
	}
	require.Equal(t, []string{"my-ledger"}, secrets)

	out, err := helmOutput(t, bin, "template", "toolgate", chart, "--set", "bundle.url=")
	require.Error(t, err)
	require.Contains(t, out, "bundle.url is required")
}
