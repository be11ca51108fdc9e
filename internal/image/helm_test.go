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

// dsn is a ledger DSN for renders: the chart refuses to render without one.
var dsn = []string{"--set", "ledger.dsn=postgres://toolgate:s3cret@postgres.toolgate.svc:5432/toolgate?sslmode=require"}

// TestHelmChart renders the chart with helm and checks the output as the
// plain manifest is checked (the serve arguments through toolgate's own
// flag parser, probes, volumes, the Secret's settings file), for a DSN and
// for an issuer, more replicas and a pinned tag; the chart passes helm
// lint --strict, names the project's image, and refuses to render without
// a bundle or a DSN, or with the example DSN's CHANGE-ME password.
func TestHelmChart(t *testing.T) {
	bin := helm(t)
	t.Parallel()
	out := runHelm(t, bin, append([]string{"lint", "--strict", chart}, dsn...)...)
	require.Contains(t, out, "0 chart(s) failed")

	c := checkManifest(t, decode(t, strings.NewReader(runHelm(t, bin, append([]string{"template", "toolgate", chart}, dsn...)...))), 2)
	require.Equal(t, "ghcr.io/toolgate/toolgate:latest", c.Image)

	c = checkManifest(t, decode(t, strings.NewReader(runHelm(t, bin, append([]string{"template", "gw", chart,
		"--set", "replicaCount=3", "--set", "image.tag=v1.2.3",
		"--set", "issuer.url=https://issuer.example.com", "--set", "issuer.resource=https://mcp.example.com/mcp",
		"--set", "issuer.audience={a,b}", "--set", "extraArgs={--max-sessions=5000}"}, dsn...)...))), 3)
	require.Equal(t, "ghcr.io/toolgate/toolgate:v1.2.3", c.Image)
	for _, a := range []string{"--issuer=https://issuer.example.com", "--resource=https://mcp.example.com/mcp",
		"--audience=a", "--audience=b", "--max-sessions=5000"} {
		require.Contains(t, c.Args, a)
	}

	// The ledger DSN from an existing Secret: the chart makes none and
	// mounts that one, which holds tokens.yaml too.
	objs := decode(t, strings.NewReader(runHelm(t, bin, "template", "toolgate", chart, "--set", "ledger.existingSecret=my-ledger")))
	require.NotContains(t, objs, "Secret")
	pod := podOf(t, objs["Deployment"])
	require.Equal(t, map[string]string{"ledger": "my-ledger"}, pod.secretVolumes())
	require.Contains(t, pod.Containers[0].Args, "--config=/etc/toolgate/ledger/ledger.yaml")
	require.Contains(t, pod.Containers[0].Args, "--tokens=/etc/toolgate/ledger/tokens.yaml")

	// An existing Secret for the DSN and tokens in the values: the tokens
	// are rendered into the chart's Secret, which holds no DSN, and read
	// from there.
	objs = decode(t, strings.NewReader(runHelm(t, bin, "template", "toolgate", chart, "--set", "ledger.existingSecret=my-ledger",
		"--set", "tokens.9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08.subject=ci-bot")))
	require.Contains(t, objs, "Secret")
	sec := objs["Secret"]
	require.NotContains(t, sec.StringData, "ledger.yaml")
	require.Contains(t, sec.StringData["tokens.yaml"], "ci-bot")
	pod = podOf(t, objs["Deployment"])
	require.Equal(t, map[string]string{"ledger": "my-ledger", "secret": sec.Metadata.Name}, pod.secretVolumes())
	require.Contains(t, pod.Containers[0].Args, "--config=/etc/toolgate/ledger/ledger.yaml")
	require.Contains(t, pod.Containers[0].Args, "--tokens=/etc/toolgate/secret/tokens.yaml")

	for what, args := range map[string][]string{
		"bundle.url is required":                                append([]string{"--set", "bundle.url="}, dsn...),
		"ledger.dsn is required":                                nil,
		"ledger.dsn still holds the example password CHANGE-ME": {"--set", "ledger.dsn=postgres://toolgate:CHANGE-ME@db:5432/toolgate"},
	} {
		out, err := helmOutput(t, bin, append([]string{"template", "toolgate", chart}, args...)...)
		require.Error(t, err, what)
		require.Contains(t, out, what)
	}
}

// TestHelmChartRestricted: the chart's pods pass the restricted Pod
// Security Standard (non-root, no privilege escalation, every capability
// dropped, the runtime's default seccomp profile, on the pod and the
// container) and get no service-account token; a NetworkPolicy is
// rendered only when asked for, letting in only the MCP port and letting
// out only DNS and what the values name.
func TestHelmChartRestricted(t *testing.T) {
	bin := helm(t)
	t.Parallel()
	objs := decode(t, strings.NewReader(runHelm(t, bin, append([]string{"template", "toolgate", chart}, dsn...)...)))
	require.NotContains(t, objs, "NetworkPolicy", "off by default")
	requireRestricted(t, podOf(t, objs["Deployment"]))

	objs = decode(t, strings.NewReader(runHelm(t, bin, append([]string{"template", "toolgate", chart,
		"--set", "networkPolicy.enabled=true",
		"--set", "networkPolicy.ingressFrom[0].namespaceSelector.matchLabels.team=agents",
		"--set", "networkPolicy.egress[0].to[0].ipBlock.cidr=10.0.0.0/8"}, dsn...)...)))
	require.Contains(t, objs, "NetworkPolicy")
	np := objs["NetworkPolicy"]
	require.Equal(t, "networking.k8s.io/v1", np.APIVersion)
	var spec struct {
		PodSelector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"podSelector"`
		PolicyTypes []string `yaml:"policyTypes"`
		Ingress     []struct {
			From  []map[string]any `yaml:"from"`
			Ports []struct {
				Port any `yaml:"port"`
			} `yaml:"ports"`
		} `yaml:"ingress"`
		Egress []map[string]any `yaml:"egress"`
	}
	require.NoError(t, np.Spec.Decode(&spec))
	require.Equal(t, podOf(t, objs["Deployment"]).Labels, spec.PodSelector.MatchLabels, "it selects toolgate's pods")
	require.Equal(t, []string{"Ingress", "Egress"}, spec.PolicyTypes)
	require.Len(t, spec.Ingress, 1)
	require.Equal(t, "http", spec.Ingress[0].Ports[0].Port, "only the MCP port")
	require.Len(t, spec.Ingress[0].From, 1)
	require.Len(t, spec.Egress, 2, "DNS, and the rule of the values")
}

// requireRestricted checks a pod as the restricted Pod Security Standard
// does, and that it gets no service-account token.
func requireRestricted(t *testing.T, pod pod) {
	t.Helper()
	require.NotNil(t, pod.AutomountServiceAccountToken)
	require.False(t, *pod.AutomountServiceAccountToken)
	require.True(t, pod.SecurityContext.RunAsNonRoot)
	require.Equal(t, "RuntimeDefault", pod.SecurityContext.SeccompProfile.Type)
	require.Len(t, pod.Containers, 1)
	sc := pod.Containers[0].SecurityContext
	require.Equal(t, "RuntimeDefault", sc.SeccompProfile.Type)
	require.NotNil(t, sc.AllowPrivilegeEscalation)
	require.False(t, *sc.AllowPrivilegeEscalation)
	require.Equal(t, []string{"ALL"}, sc.Capabilities.Drop)
}

// pod is the pod template of a rendered Deployment, as far as the chart
// tests read it.
type pod struct {
	Labels                       map[string]string
	AutomountServiceAccountToken *bool `yaml:"automountServiceAccountToken"`
	SecurityContext              struct {
		RunAsNonRoot   bool `yaml:"runAsNonRoot"`
		SeccompProfile struct {
			Type string `yaml:"type"`
		} `yaml:"seccompProfile"`
	} `yaml:"securityContext"`
	Containers []struct {
		Args            []string `yaml:"args"`
		SecurityContext struct {
			AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
			Capabilities             struct {
				Drop []string `yaml:"drop"`
			} `yaml:"capabilities"`
			SeccompProfile struct {
				Type string `yaml:"type"`
			} `yaml:"seccompProfile"`
		} `yaml:"securityContext"`
	} `yaml:"containers"`
	Volumes []struct {
		Name   string `yaml:"name"`
		Secret *struct {
			SecretName string `yaml:"secretName"`
		} `yaml:"secret"`
	} `yaml:"volumes"`
}

func podOf(t *testing.T, dep object) pod {
	t.Helper()
	var d struct {
		Template struct {
			Metadata meta `yaml:"metadata"`
			Spec     pod  `yaml:"spec"`
		} `yaml:"template"`
	}
	require.NoError(t, dep.Spec.Decode(&d))
	p := d.Template.Spec
	p.Labels = d.Template.Metadata.Labels
	return p
}

// secretVolumes maps each Secret volume to the Secret it names.
func (p pod) secretVolumes() map[string]string {
	out := map[string]string{}
	for _, v := range p.Volumes {
		if v.Secret != nil {
			out[v.Name] = v.Secret.SecretName
		}
	}
	return out
}
