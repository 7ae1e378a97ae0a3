package k8s

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// decode reads a manifest strictly into the Kubernetes API's Job: a field
// the API does not have, or a value of the wrong type, fails.
func decode(t *testing.T, b []byte) *batchv1.Job {
	t.Helper()
	var job batchv1.Job
	if err := yaml.UnmarshalStrict(b, &job); err != nil {
		t.Fatalf("not a batch/v1 Job: %v\n%s", err, b)
	}
	return &job
}

// TestJobIsIndexedJob: the manifest decodes strictly into batch/v1 Job
// and asks for what a sharded campaign needs: an Indexed Job of N
// completions, one privileged (or capable) container running `lockstep
// run --shard N` into the shared claim.
func TestJobIsIndexedJob(t *testing.T) {
	for _, tc := range []struct {
		name string
		job  Job
	}{
		{"privileged", Job{SpecName: "lockserver-demo", Spec: "testdata/demo/demo.yaml", Image: "localhost/lockstep:0.1.0", Shards: 8, PVC: "results", Retries: 1}},
		{"caps", Job{SpecName: "Raft_3 nodes", Spec: "/specs/raft.yaml", Image: "reg.example/lockstep@sha256:abc", Shards: 3, Parallel: 2, PVC: "runs",
			Results: "/mnt/runs", Namespace: "ci", Caps: true, CPU: "2", RunArgs: []string{"--trials", "300", "--seed", "-4"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := tc.job.YAML()
			if err != nil {
				t.Fatal(err)
			}
			job := decode(t, b)
			if job.APIVersion != "batch/v1" || job.Kind != "Job" {
				t.Errorf("apiVersion %q kind %q", job.APIVersion, job.Kind)
			}
			for _, name := range []string{job.Name, job.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName} {
				if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
					t.Errorf("name %q: %v", name, errs)
				}
			}
			for k, v := range job.Spec.Template.Labels {
				if errs := append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...); len(errs) > 0 {
					t.Errorf("label %s=%s: %v", k, v, errs)
				}
			}
			s := job.Spec
			par := tc.job.Parallel
			if par == 0 {
				par = tc.job.Shards
			}
			if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion ||
				s.Completions == nil || int(*s.Completions) != tc.job.Shards || s.Parallelism == nil || int(*s.Parallelism) != par {
				t.Errorf("not an Indexed Job of %d completions, %d at once: %+v", tc.job.Shards, par, s)
			}
			if s.BackoffLimitPerIndex == nil || int(*s.BackoffLimitPerIndex) != tc.job.Retries {
				t.Errorf("backoffLimitPerIndex %v, want %d", s.BackoffLimitPerIndex, tc.job.Retries)
			}
			if p := s.PodFailurePolicy; p == nil || len(p.Rules) != 2 || p.Rules[0].Action != batchv1.PodFailurePolicyActionFailIndex ||
				p.Rules[0].OnExitCodes.Values[0] != 2 || p.Rules[1].Action != batchv1.PodFailurePolicyActionIgnore {
				t.Errorf("pod failure policy %+v", p)
			}
			pod := s.Template.Spec
			if pod.RestartPolicy != corev1.RestartPolicyNever || pod.HostPID || pod.HostNetwork || len(pod.Containers) != 1 {
				t.Fatalf("pod %+v", pod)
			}
			c := pod.Containers[0]
			out := tc.job.results() + "/" + job.Name
			want := append([]string{"lockstep", "run", tc.job.Spec, "--shard", strconv.Itoa(tc.job.Shards), "--out", out, "--quiet"}, tc.job.RunArgs...)
			if !slices.Equal(c.Command, want) || c.Image != tc.job.Image {
				t.Errorf("command %q image %q, want %q %q", c.Command, c.Image, want, tc.job.Image)
			}
			if slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "JOB_COMPLETION_INDEX" }) {
				t.Error("JOB_COMPLETION_INDEX is the Job controller's to set")
			}
			sc := c.SecurityContext
			if tc.job.Caps {
				var caps []string
				for _, cp := range sc.Capabilities.Add {
					caps = append(caps, string(cp))
				}
				if sc.Privileged != nil || !slices.Equal(caps, Capabilities) ||
					sc.SeccompProfile.Type != corev1.SeccompProfileTypeUnconfined || sc.AppArmorProfile.Type != corev1.AppArmorProfileTypeUnconfined {
					t.Errorf("security context %+v", sc)
				}
			} else if sc.Privileged == nil || !*sc.Privileged || sc.Capabilities != nil {
				t.Errorf("security context %+v, want privileged", sc)
			}
			if sc.RunAsUser == nil || *sc.RunAsUser != 0 {
				t.Errorf("runAsUser %v, want 0", sc.RunAsUser)
			}
			if q := c.Resources.Requests[corev1.ResourceCPU]; q.String() != max(tc.job.CPU, "1") {
				t.Errorf("cpu request %v", q.String())
			}
			if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != tc.job.results() || c.VolumeMounts[0].Name != pod.Volumes[0].Name ||
				pod.Volumes[0].PersistentVolumeClaim.ClaimName != tc.job.PVC || pod.Volumes[0].HostPath != nil {
				t.Errorf("volumes %+v mounts %+v", pod.Volumes, c.VolumeMounts)
			}
			if tc.job.Namespace != job.Namespace {
				t.Errorf("namespace %q", job.Namespace)
			}
		})
	}
}

// TestJobBadInput: each bad field is refused with a message naming it.
func TestJobBadInput(t *testing.T) {
	ok := Job{SpecName: "s", Spec: "s.yaml", Image: "i", Shards: 2, PVC: "p"}
	for _, tc := range []struct {
		field string
		edit  func(*Job)
	}{
		{"--name", func(j *Job) { j.Name = "Bad_Name" }},
		{"--name", func(j *Job) { j.Name = strings.Repeat("a", 60) }},
		{"--shards", func(j *Job) { j.Shards = 0 }},
		{"--parallelism", func(j *Job) { j.Parallel = 3 }},
		{"--image", func(j *Job) { j.Image = "" }},
		{"--pvc", func(j *Job) { j.PVC = "" }},
		{"--results", func(j *Job) { j.Results = "rel/dir" }},
		{"--namespace", func(j *Job) { j.Namespace = "a.b" }},
		{"--retries", func(j *Job) { j.Retries = -1 }},
	} {
		j := ok
		tc.edit(&j)
		_, err := j.YAML()
		if err == nil || !strings.HasPrefix(err.Error(), tc.field) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got %v", tc.field, err)
		}
	}
	if _, err := ok.YAML(); err != nil {
		t.Fatal(err)
	}
}

// TestName: spec names become DNS labels short enough for pod names.
func TestName(t *testing.T) {
	for in, want := range map[string]string{
		"lockserver-demo":        "lockstep-lockserver-demo",
		"Raft_3 nodes":           "lockstep-raft-3-nodes",
		strings.Repeat("x", 100): "lockstep-" + strings.Repeat("x", maxName-len("lockstep-")),
		"ends-":                  "lockstep-ends",
	} {
		if got := Name(in); got != want || len(validation.IsDNS1123Label(got)) > 0 {
			t.Errorf("Name(%q) = %q, want %q", in, got, want)
		}
	}
}
