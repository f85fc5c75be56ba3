// Command cmp-client drives an argocd-cmp-server over its unix socket exactly as
// argocd-repo-server does for an Application whose source uses a config management plugin:
// it merges the app path's .argocd-source.yaml and .argocd-source-<app>.yaml into the plugin source,
// builds the plugin environment (ARGOCD_APP_*, KUBE_VERSION, KUBE_API_VERSIONS, ARGOCD_ENV_*,
// ARGOCD_APP_PARAMETERS and PARAM_*) with Argo CD's own types, finds the plugin with Argo CD's
// discovery (CheckPluginConfiguration, then MatchRepository with the repository tarball), and
// streams the repository to GenerateManifest. Every manifest that comes back is parsed the way
// the repo-server parses it.
//
// Input: a JSON request on stdin (see request). Output: a JSON response on stdout (see response).
// Exit status 0 whenever a response was written, including one that carries an error.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/argoproj/argo-cd/gitops-engine/pkg/utils/kube"
	grpc_retry "github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/retry"
	"google.golang.org/protobuf/types/known/emptypb"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"sigs.k8s.io/yaml"

	"github.com/argoproj/argo-cd/v3/common"
	"github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/argoproj/argo-cd/v3/util/app/discovery"
	"github.com/argoproj/argo-cd/v3/util/cmp"
	utilio "github.com/argoproj/argo-cd/v3/util/io"
)

type request struct {
	// RepoPath is the checked-out repository; AppPath is the Application's spec.source.path in it.
	RepoPath string `json:"repoPath"`
	AppPath  string `json:"appPath"`
	// Op is "match" (discovery only) or "generate".
	Op string `json:"op"`
	// Plugin is spec.source.plugin (name, env, parameters), or null for auto-discovery. When it is
	// given, the app path's override files are merged into it first, as the repo-server does.
	Plugin *v1alpha1.ApplicationSourcePlugin `json:"plugin"`
	// App fields the repo-server puts into the environment.
	AppName     string   `json:"appName"`
	Namespace   string   `json:"namespace"`
	Project     string   `json:"project"`
	RepoURL     string   `json:"repoURL"`
	Revision    string   `json:"revision"`
	TargetRev   string   `json:"targetRevision"`
	KubeVersion string   `json:"kubeVersion"`
	APIVersions []string `json:"apiVersions"`
	// TimeoutSeconds is the request deadline (Argo CD's repo-server timeout, 60 s by default).
	TimeoutSeconds int `json:"timeoutSeconds"`
}

type response struct {
	Matched   bool     `json:"matched"`
	Manifests []string `json:"manifests,omitempty"`
	// Objects are the "apiVersion/kind/namespace/name" of every object, after kube.SplitYAML.
	Objects []string `json:"objects,omitempty"`
	Env     []string `json:"env,omitempty"`
	// Plugin is the plugin source after the override files were merged into it.
	Plugin *v1alpha1.ApplicationSourcePlugin `json:"plugin,omitempty"`
	Error  string                            `json:"error,omitempty"`
	Millis int64                             `json:"millis"`
}

func shorten(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// mergeOverrides mirrors reposerver/repository.mergeSourceParameters (Argo CD v3.5.7, unexported;
// called by GetAppSourceType before a plugin runs): .argocd-source.yaml, then
// .argocd-source-<appName>.yaml, each a JSON merge patch of the whole spec.source, of which only
// chart, path, repoURL and targetRevision are kept from the Application. So the repository sets
// plugin.name, plugin.env and plugin.parameters as freely as the Application does.
func mergeOverrides(source *v1alpha1.ApplicationSource, appPath, appName string) error {
	files := []string{filepath.Join(appPath, ".argocd-source.yaml")}
	if appName != "" {
		files = append(files, filepath.Join(appPath, fmt.Sprintf(".argocd-source-%s.yaml", appName)))
	}
	merged := *source.DeepCopy()
	for _, name := range files {
		info, err := os.Stat(name)
		switch {
		case os.IsNotExist(err):
			continue
		case info != nil && info.IsDir():
			continue
		case err != nil:
			return err
		}
		data, err := json.Marshal(merged)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		patch, err := os.ReadFile(name)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if patch, err = yaml.YAMLToJSON(patch); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if data, err = jsonpatch.MergePatch(data, patch); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if err = json.Unmarshal(data, &merged); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	merged.Chart = source.Chart
	merged.Path = source.Path
	merged.RepoURL = source.RepoURL
	merged.TargetRevision = source.TargetRevision
	*source = merged
	return nil
}

// environ mirrors reposerver/repository.newEnv + getPluginEnvs (Argo CD v3.5.7).
func environ(q *request) ([]string, error) {
	env := v1alpha1.Env{
		&v1alpha1.EnvEntry{Name: "ARGOCD_APP_NAME", Value: q.AppName},
		&v1alpha1.EnvEntry{Name: "ARGOCD_APP_NAMESPACE", Value: q.Namespace},
		&v1alpha1.EnvEntry{Name: "ARGOCD_APP_PROJECT_NAME", Value: q.Project},
		&v1alpha1.EnvEntry{Name: "ARGOCD_APP_REVISION", Value: q.Revision},
		&v1alpha1.EnvEntry{Name: "ARGOCD_APP_REVISION_SHORT", Value: shorten(q.Revision, 7)},
		&v1alpha1.EnvEntry{Name: "ARGOCD_APP_REVISION_SHORT_8", Value: shorten(q.Revision, 8)},
		&v1alpha1.EnvEntry{Name: "ARGOCD_APP_SOURCE_REPO_URL", Value: q.RepoURL},
		&v1alpha1.EnvEntry{Name: "ARGOCD_APP_SOURCE_PATH", Value: q.AppPath},
		&v1alpha1.EnvEntry{Name: "ARGOCD_APP_SOURCE_TARGET_REVISION", Value: q.TargetRev},
	}
	vars := env.Environ()
	vars = append(vars, "KUBE_VERSION="+q.KubeVersion, "KUBE_API_VERSIONS="+strings.Join(q.APIVersions, ","))
	parsed := make(v1alpha1.Env, len(vars))
	for i, v := range vars {
		e, err := v1alpha1.NewEnvEntry(v)
		if err != nil {
			return nil, fmt.Errorf("failed to parse env vars: %w", err)
		}
		parsed[i] = e
	}
	if q.Plugin != nil {
		for _, entry := range q.Plugin.Env {
			vars = append(vars, fmt.Sprintf("ARGOCD_ENV_%s=%s", entry.Name, parsed.Envsubst(entry.Value)))
		}
		paramEnv, err := q.Plugin.Parameters.Environ()
		if err != nil {
			return nil, err
		}
		vars = append(vars, paramEnv...)
	}
	return vars, nil
}

func run(q *request) (*response, error) {
	res := &response{}
	timeout := time.Duration(q.TimeoutSeconds) * time.Second
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	repoPath, err := filepath.Abs(q.RepoPath)
	if err != nil {
		return nil, err
	}
	appPath := filepath.Join(repoPath, q.AppPath)
	if q.Plugin != nil {
		source := &v1alpha1.ApplicationSource{RepoURL: q.RepoURL, Path: q.AppPath, TargetRevision: q.TargetRev, Plugin: q.Plugin}
		if err := mergeOverrides(source, appPath, q.AppName); err != nil {
			return nil, fmt.Errorf("error getting app source type: error while parsing source parameters: %w", err)
		}
		q.Plugin = source.Plugin
	}
	env, err := environ(q)
	if err != nil {
		return nil, err
	}
	res.Env = env
	res.Plugin = q.Plugin
	pluginName := ""
	if q.Plugin != nil {
		pluginName = q.Plugin.Name
	}
	conn, client, err := discovery.DetectConfigManagementPlugin(ctx, appPath, repoPath, pluginName, env, nil)
	if err != nil {
		return res, err
	}
	defer utilio.Close(conn)
	res.Matched = true
	if q.Op == "match" {
		return res, nil
	}
	if _, err := client.CheckPluginConfiguration(ctx, &emptypb.Empty{}); err != nil {
		return res, fmt.Errorf("error calling cmp-server checkPluginConfiguration: %w", err)
	}
	stream, err := client.GenerateManifest(ctx, grpc_retry.Disable())
	if err != nil {
		return res, fmt.Errorf("error getting generateManifestStream: %w", err)
	}
	if err := cmp.SendRepoStream(ctx, appPath, repoPath, stream, env, nil); err != nil {
		return res, fmt.Errorf("error sending file to cmp-server: %w", err)
	}
	out, err := stream.CloseAndRecv()
	if err != nil {
		return res, fmt.Errorf("error generating manifests in cmp: %w", err)
	}
	res.Manifests = out.Manifests
	for _, m := range out.Manifests {
		objs, err := kube.SplitYAML([]byte(m))
		if err != nil {
			return res, fmt.Errorf("failed to convert CMP manifests to unstructured objects: %w", err)
		}
		for _, o := range objs {
			res.Objects = append(res.Objects, fmt.Sprintf("%s/%s/%s/%s", o.GetAPIVersion(), o.GetKind(), o.GetNamespace(), o.GetName()))
		}
	}
	return res, nil
}

func main() {
	var q request
	if err := json.NewDecoder(os.Stdin).Decode(&q); err != nil {
		fmt.Fprintf(os.Stderr, "cmp-client: bad request: %v\n", err)
		os.Exit(2)
	}
	if os.Getenv(common.EnvPluginSockFilePath) == "" {
		fmt.Fprintf(os.Stderr, "cmp-client: %s must name the plugin socket folder\n", common.EnvPluginSockFilePath)
		os.Exit(2)
	}
	t0 := time.Now()
	res, err := run(&q)
	if res == nil {
		res = &response{}
	}
	if err != nil {
		res.Error = err.Error()
	}
	res.Millis = time.Since(t0).Milliseconds()
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		os.Exit(70)
	}
}
