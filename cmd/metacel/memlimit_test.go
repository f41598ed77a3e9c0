package main

import (
	"context"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"
)

func TestGoMemoryLimit(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    int64
		wantErr string
	}{
		{"no limit leaves the runtime's", nil, 0, ""},
		{"90 % of the container's limit", map[string]string{memoryLimitEnv: "536870912"}, 483183821, ""},
		{"surrounding space is ignored", map[string]string{memoryLimitEnv: " 1000\n"}, 900, ""},
		{"GOMEMLIMIT wins", map[string]string{memoryLimitEnv: "536870912", "GOMEMLIMIT": "300MiB"}, 0, ""},
		{"GOMEMLIMIT wins over a malformed limit", map[string]string{memoryLimitEnv: "lots", "GOMEMLIMIT": "off"}, 0, ""},
		{"a quantity is not bytes", map[string]string{memoryLimitEnv: "512Mi"}, 0, `METACEL_MEMORY_LIMIT="512Mi"`},
		{"zero is an error", map[string]string{memoryLimitEnv: "0"}, 0, `METACEL_MEMORY_LIMIT="0"`},
		{"a negative limit is an error", map[string]string{memoryLimitEnv: "-1"}, 0, `METACEL_MEMORY_LIMIT="-1"`},
		{"an overflowing limit is an error", map[string]string{memoryLimitEnv: "99999999999999999999"}, 0, `METACEL_MEMORY_LIMIT="99999999999999999999"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := goMemoryLimit(func(k string) string { return tc.env[k] })
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("want an error naming %s, got %v", tc.wantErr, err)
			case got != tc.want:
				t.Errorf("got %d, want %d", got, tc.want)
			}
		})
	}
}

func TestSetGoMemoryLimitAppliesAndLogsIt(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	var logs strings.Builder
	ctx := klog.NewContext(context.Background(), funcr.New(func(prefix, args string) { logs.WriteString(args + "\n") }, funcr.Options{}))

	env := map[string]string{memoryLimitEnv: "1048576000"}
	if err := setGoMemoryLimit(ctx, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got != 943718400 {
		t.Errorf("the Go memory limit is %d, want 943718400", got)
	}
	if !strings.Contains(logs.String(), `"memoryLimit"=943718400`) {
		t.Errorf("the log lacks the limit:\n%s", logs.String())
	}
}

// TestDeploymentPassesTheMemoryLimit checks that the kustomize base gives metacel its container's
// memory limit (the chart's is checked by the e2e tests, which render it with helm).
func TestDeploymentPassesTheMemoryLimit(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repo, "deploy", "deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict(data, &d); err != nil {
		t.Fatal(err)
	}
	c := d.Spec.Template.Spec.Containers[0]
	if c.Resources.Limits.Memory().IsZero() {
		t.Errorf("container %s has no memory limit", c.Name)
	}
	for _, e := range c.Env {
		if e.Name == memoryLimitEnv {
			if f := e.ValueFrom; f == nil || f.ResourceFieldRef == nil || f.ResourceFieldRef.Resource != "limits.memory" {
				t.Errorf("%s is not from the downward API's limits.memory: %+v", memoryLimitEnv, e)
			}
			return
		}
	}
	t.Errorf("container %s has no %s", c.Name, memoryLimitEnv)
}
