package image_test

// The deployment examples under deploy/ (kubernetes.yaml, the Helm chart)
// are checked here, beside the image they run, without a cluster.

import (
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/toolgate/toolgate/internal/config"
	"github.com/toolgate/toolgate/internal/image"
	"github.com/toolgate/toolgate/internal/testkit/proctest"
)

type meta struct {
	Name   string            `yaml:"name"`
	Labels map[string]string `yaml:"labels"`
}

type object struct {
	APIVersion string         `yaml:"apiVersion"`
	Kind       string         `yaml:"kind"`
	Metadata   meta           `yaml:"metadata"`
	Data       map[string]any `yaml:"data"`
	StringData map[string]any `yaml:"stringData"`
	Spec       yaml.Node      `yaml:"spec"`
}

type probe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port string `yaml:"port"`
	} `yaml:"httpGet"`
}

type container struct {
	Name  string   `yaml:"name"`
	Image string   `yaml:"image"`
	Args  []string `yaml:"args"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	ReadinessProbe *probe `yaml:"readinessProbe"`
	LivenessProbe  *probe `yaml:"livenessProbe"`
	VolumeMounts   []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

type deploymentSpec struct {
	Replicas int `yaml:"replicas"`
	Selector struct {
		MatchLabels map[string]string `yaml:"matchLabels"`
	} `yaml:"selector"`
	Template struct {
		Metadata meta `yaml:"metadata"`
		Spec     struct {
			Containers []container `yaml:"containers"`
			Volumes    []struct {
				Name   string `yaml:"name"`
				Secret *struct {
					SecretName string `yaml:"secretName"`
				} `yaml:"secret"`
				ConfigMap *struct {
					Name string `yaml:"name"`
				} `yaml:"configMap"`
				EmptyDir any `yaml:"emptyDir"`
			} `yaml:"volumes"`
		} `yaml:"spec"`
	} `yaml:"template"`
}

type serviceSpec struct {
	Selector map[string]string `yaml:"selector"`
	Ports    []struct {
		Port       int    `yaml:"port"`
		TargetPort string `yaml:"targetPort"`
	} `yaml:"ports"`
	SessionAffinity string `yaml:"sessionAffinity"`
}

func load(t *testing.T) map[string]object {
	t.Helper()
	f, err := os.Open(filepath.Join(proctest.Root, "deploy", "kubernetes.yaml"))
	require.NoError(t, err)
	defer f.Close()
	return decode(t, f)
}

// decode reads a stream of YAML documents (kubernetes.yaml, helm template's
// output) into its objects by kind; empty documents are skipped.
func decode(t *testing.T, r io.Reader) map[string]object {
	t.Helper()
	dec := yaml.NewDecoder(r)
	out := map[string]object{}
	for {
		var o object
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		if o.Kind == "" && o.APIVersion == "" {
			continue
		}
		require.NotEmpty(t, o.Metadata.Name, "%s without a name", o.Kind)
		_, dup := out[o.Kind]
		require.False(t, dup, "two %s", o.Kind)
		out[o.Kind] = o
	}
	return out
}

// TestKubernetesManifest checks what a cluster would and what only we know:
// kinds and API versions, selectors that select the pods, probes on
// /healthz at a declared port, volumes that name the Secret and ConfigMap
// of the file, `serve` arguments that toolgate serve accepts, and a pod
// the restricted Pod Security Standard admits.
func TestKubernetesManifest(t *testing.T) {
	t.Parallel()
	objs := load(t)
	checkManifest(t, objs, 2)
	requireRestricted(t, podOf(t, objs["Deployment"]))
}

// checkManifest checks a Secret, ConfigMap, Deployment of replicas pods and
// Service as TestKubernetesManifest describes; it returns the container.
func checkManifest(t *testing.T, objs map[string]object, replicas int) container {
	t.Helper()
	want := map[string]string{"Secret": "v1", "ConfigMap": "v1", "Deployment": "apps/v1", "Service": "v1"}
	require.Len(t, objs, len(want))
	for kind, api := range want {
		require.Contains(t, objs, kind)
		require.Equal(t, api, objs[kind].APIVersion, kind)
	}

	var d deploymentSpec
	dep := objs["Deployment"]
	require.NoError(t, dep.Spec.Decode(&d))
	require.Equal(t, replicas, d.Replicas)
	require.NotEmpty(t, d.Selector.MatchLabels)
	for k, v := range d.Selector.MatchLabels {
		require.Equal(t, v, d.Template.Metadata.Labels[k], "the selector selects the pods")
	}
	require.Len(t, d.Template.Spec.Containers, 1)
	c := d.Template.Spec.Containers[0]
	require.True(t, strings.HasPrefix(c.Image, image.Repository+":") || strings.HasPrefix(c.Image, image.Repository+"@"),
		"the container runs the image the project builds (%s), not %q", image.Repository, c.Image)

	ports := map[string]int{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	for name, p := range map[string]*probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		require.NotNil(t, p, name)
		require.NotNil(t, p.HTTPGet, name)
		require.Equal(t, "/healthz", p.HTTPGet.Path, name)
		require.Contains(t, ports, p.HTTPGet.Port, name)
	}

	volumes := map[string]bool{}
	for _, v := range d.Template.Spec.Volumes {
		volumes[v.Name] = true
		if v.Secret != nil {
			require.Equal(t, objs["Secret"].Metadata.Name, v.Secret.SecretName)
		}
		if v.ConfigMap != nil {
			require.Equal(t, objs["ConfigMap"].Metadata.Name, v.ConfigMap.Name)
		}
	}
	mounts := map[string]string{} // mount path → volume
	for _, m := range c.VolumeMounts {
		require.True(t, volumes[m.Name], "mount of an undeclared volume %q", m.Name)
		mounts[m.MountPath] = m.Name
	}

	// The arguments are `toolgate serve`'s: every flag exists, every value parses.
	require.Equal(t, "serve", c.Args[0])
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	flags := config.ServeFlags(fs)
	require.NoError(t, fs.Parse(c.Args[1:]))
	require.Empty(t, fs.Args(), "arguments that are not flags")
	set := map[string]string{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = f.Value.String() })
	for _, name := range []string{"bundle", "bundle-verification-key", "http", "config"} {
		require.Contains(t, set, name)
	}
	require.NotEmpty(t, flags.Config)
	// Files the flags name are in mounted volumes, with their keys in the
	// Secret or ConfigMap.
	for _, name := range []string{"config", "tokens", "bundle-verification-key"} {
		p, ok := set[name]
		if !ok {
			continue
		}
		i := strings.LastIndex(p, "/")
		vol, ok := mounts[p[:i]]
		require.True(t, ok, "--%s=%s is not in a mounted volume", name, p)
		key := p[i+1:]
		switch vol {
		case "secret":
			require.Contains(t, objs["Secret"].StringData, key, "--%s", name)
		case "bundle-key":
			require.Contains(t, objs["ConfigMap"].Data, key, "--%s", name)
		}
	}
	// The settings file in the Secret is one toolgate reads.
	dir := t.TempDir()
	path := dir + "/ledger.yaml"
	require.NoError(t, os.WriteFile(path, []byte(objs["Secret"].StringData["ledger.yaml"].(string)), 0o600))
	s, err := config.LoadFile(path)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(s.Ledger, "postgres://"), "the Secret holds the PostgreSQL DSN")

	var svc serviceSpec
	svcObj := objs["Service"]
	require.NoError(t, svcObj.Spec.Decode(&svc))
	for k, v := range svc.Selector {
		require.Equal(t, v, d.Template.Metadata.Labels[k], "the Service selects the pods")
	}
	require.NotEmpty(t, svc.Ports)
	for _, p := range svc.Ports {
		require.Contains(t, ports, p.TargetPort)
	}
	require.Equal(t, "ClientIP", svc.SessionAffinity, "sessions of 2025-xx revisions need affinity")
	return c
}
