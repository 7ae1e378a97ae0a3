package k8s

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
)

// Capabilities are those lockstep needs beyond a container's defaults
// when it does not run privileged: namespaces, mounts and cgroups
// (SYS_ADMIN), bridges, veths and firewall rules (NET_ADMIN), tracing the
// nodes (SYS_PTRACE), its eBPF programs (BPF, PERFMON), real-time priority
// for the nodes' threads (SYS_NICE) and the locked-memory limit of eBPF
// maps on kernels before 5.11 (SYS_RESOURCE).
var Capabilities = []string{"SYS_ADMIN", "NET_ADMIN", "SYS_PTRACE", "BPF", "PERFMON", "SYS_NICE", "SYS_RESOURCE"}

// Job describes the campaign to run as an Indexed Job.
type Job struct {
	Name      string // the Job's name (a DNS label); "" = lockstep-SPECNAME
	SpecName  string // the spec's name, for labels and the default name
	Spec      string // the spec's path inside the image
	Image     string
	Shards    int
	Parallel  int    // pods at once; 0 = Shards
	PVC       string // the claim the shards write their results to
	Results   string // where the claim is mounted; "" = /results
	Namespace string
	// RunArgs are further `lockstep run` arguments (--trials, --seed, ...).
	RunArgs []string
	// Caps grants Capabilities (and unconfined seccomp and AppArmor)
	// instead of a privileged container. Only a privileged container gets
	// a writable cgroup v2 hierarchy from every runtime.
	Caps bool
	// CPU is the CPUs requested per pod, as a quantity ("" = 1).
	CPU string
	// Retries is how often a shard's pod may fail before its index counts
	// as failed (backoffLimitPerIndex).
	Retries int
}

// The manifest's types: the subset of batch/v1 Job used, with the API's
// field names.
type (
	manifest struct {
		APIVersion string  `yaml:"apiVersion"`
		Kind       string  `yaml:"kind"`
		Metadata   meta    `yaml:"metadata"`
		Spec       jobSpec `yaml:"spec"`
	}
	meta struct {
		Name      string            `yaml:"name,omitempty"`
		Namespace string            `yaml:"namespace,omitempty"`
		Labels    map[string]string `yaml:"labels,omitempty"`
	}
	jobSpec struct {
		CompletionMode       string           `yaml:"completionMode"`
		Completions          int              `yaml:"completions"`
		Parallelism          int              `yaml:"parallelism"`
		BackoffLimitPerIndex int              `yaml:"backoffLimitPerIndex"`
		PodFailurePolicy     podFailurePolicy `yaml:"podFailurePolicy"`
		Template             podTemplate      `yaml:"template"`
	}
	podFailurePolicy struct {
		Rules []podFailureRule `yaml:"rules"`
	}
	podFailureRule struct {
		Action          string           `yaml:"action"`
		OnExitCodes     *onExitCodes     `yaml:"onExitCodes,omitempty"`
		OnPodConditions []onPodCondition `yaml:"onPodConditions,omitempty"`
	}
	onExitCodes struct {
		ContainerName string  `yaml:"containerName"`
		Operator      string  `yaml:"operator"`
		Values        []int32 `yaml:"values"`
	}
	onPodCondition struct {
		Type   string `yaml:"type"`
		Status string `yaml:"status"`
	}
	podTemplate struct {
		Metadata meta    `yaml:"metadata"`
		Spec     podSpec `yaml:"spec"`
	}
	podSpec struct {
		RestartPolicy string      `yaml:"restartPolicy"`
		Containers    []container `yaml:"containers"`
		Volumes       []volume    `yaml:"volumes"`
	}
	container struct {
		Name            string          `yaml:"name"`
		Image           string          `yaml:"image"`
		ImagePullPolicy string          `yaml:"imagePullPolicy"`
		Command         []string        `yaml:"command"`
		SecurityContext securityContext `yaml:"securityContext"`
		Resources       resources       `yaml:"resources"`
		VolumeMounts    []volumeMount   `yaml:"volumeMounts"`
	}
	securityContext struct {
		Privileged      *bool         `yaml:"privileged,omitempty"`
		Capabilities    *capabilities `yaml:"capabilities,omitempty"`
		SeccompProfile  *profile      `yaml:"seccompProfile,omitempty"`
		AppArmorProfile *profile      `yaml:"appArmorProfile,omitempty"`
		RunAsUser       int64         `yaml:"runAsUser"`
	}
	capabilities struct {
		Add []string `yaml:"add"`
	}
	profile struct {
		Type string `yaml:"type"`
	}
	resources struct {
		Requests map[string]string `yaml:"requests"`
	}
	volumeMount struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	}
	volume struct {
		Name                  string   `yaml:"name"`
		PersistentVolumeClaim claimRef `yaml:"persistentVolumeClaim"`
	}
	claimRef struct {
		ClaimName string `yaml:"claimName"`
	}
)

// dnsLabel is a Kubernetes object name that also fits in a pod's
// hostname with the index an Indexed Job appends.
var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// maxName leaves room in 63 characters for "-INDEX-xxxxx" pod suffixes.
const maxName = 48

// Name is the Job's default name for a spec named spec.
func Name(spec string) string {
	n := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '-'
	}, "lockstep-"+spec)
	return strings.Trim(n[:min(len(n), maxName)], "-")
}

// OutDir is where the Job's shards write, inside the volume: merge reads
// it with `lockstep merge OUTDIR`.
func (j *Job) OutDir() string { return path.Join(j.results(), j.JobName()) }

// JobName is the Job's name: Name, or lockstep-SPECNAME.
func (j *Job) JobName() string {
	if j.Name != "" {
		return j.Name
	}
	return Name(j.SpecName)
}

func (j *Job) results() string {
	if j.Results != "" {
		return j.Results
	}
	return "/results"
}

// Validate says what is wrong with j, in one line naming the field.
func (j *Job) Validate() error {
	switch {
	case !dnsLabel.MatchString(j.JobName()) || len(j.JobName()) > maxName:
		return fmt.Errorf("--name %q: want a DNS label of lower-case letters, digits and '-', at most %d characters", j.JobName(), maxName)
	case j.Shards < 1 || j.Shards > 100000:
		return fmt.Errorf("--shards %d: want between 1 and 100000", j.Shards)
	case j.Parallel < 0 || j.Parallel > j.Shards:
		return fmt.Errorf("--parallelism %d: want between 1 and --shards (%d)", j.Parallel, j.Shards)
	case j.Image == "":
		return fmt.Errorf("--image: the image holding lockstep, the spec and its programs is required")
	case j.PVC == "" || !dnsLabel.MatchString(j.PVC):
		return fmt.Errorf("--pvc %q: want the name of a ReadWriteMany PersistentVolumeClaim the shards share", j.PVC)
	case !path.IsAbs(j.results()):
		return fmt.Errorf("--results %q: want an absolute path", j.results())
	case j.Spec == "":
		return fmt.Errorf("the spec's path inside the image is required")
	case j.Namespace != "" && !dnsLabel.MatchString(j.Namespace):
		return fmt.Errorf("--namespace %q: want a DNS label", j.Namespace)
	case j.Retries < 0:
		return fmt.Errorf("--retries %d: want 0 or more", j.Retries)
	}
	return nil
}

// YAML is the Job's manifest.
func (j *Job) YAML() ([]byte, error) {
	if err := j.Validate(); err != nil {
		return nil, err
	}
	par := j.Parallel
	if par == 0 {
		par = j.Shards
	}
	cpu := j.CPU
	if cpu == "" {
		cpu = "1"
	}
	labels := map[string]string{"app.kubernetes.io/name": "lockstep", "app.kubernetes.io/instance": j.JobName()}
	cmd := append([]string{"lockstep", "run", j.Spec, "--shard", strconv.Itoa(j.Shards), "--out", j.OutDir(), "--quiet"}, j.RunArgs...)
	sc := securityContext{}
	if j.Caps {
		sc.Capabilities = &capabilities{Add: Capabilities}
		sc.SeccompProfile = &profile{Type: "Unconfined"}
		sc.AppArmorProfile = &profile{Type: "Unconfined"}
	} else {
		t := true
		sc.Privileged = &t
	}
	m := manifest{
		APIVersion: "batch/v1", Kind: "Job",
		Metadata: meta{Name: j.JobName(), Namespace: j.Namespace, Labels: labels},
		Spec: jobSpec{
			CompletionMode: "Indexed", Completions: j.Shards, Parallelism: par,
			BackoffLimitPerIndex: j.Retries,
			PodFailurePolicy: podFailurePolicy{Rules: []podFailureRule{
				// Bad input or a lockstep error: a retry fails the same.
				{Action: "FailIndex", OnExitCodes: &onExitCodes{ContainerName: "lockstep", Operator: "In", Values: []int32{2}}},
				// An evicted or preempted pod is no shard's fault.
				{Action: "Ignore", OnPodConditions: []onPodCondition{{Type: "DisruptionTarget", Status: "True"}}},
			}},
			Template: podTemplate{
				Metadata: meta{Labels: labels},
				Spec: podSpec{
					RestartPolicy: "Never",
					Containers: []container{{
						Name: "lockstep", Image: j.Image, ImagePullPolicy: "IfNotPresent", Command: cmd,
						SecurityContext: sc,
						Resources:       resources{Requests: map[string]string{"cpu": cpu}},
						VolumeMounts:    []volumeMount{{Name: "results", MountPath: j.results()}},
					}},
					Volumes: []volume{{Name: "results", PersistentVolumeClaim: claimRef{ClaimName: j.PVC}}},
				},
			},
		},
	}
	b, err := yaml.MarshalWithOptions(m, yaml.IndentSequence(true))
	if err != nil {
		return nil, fmt.Errorf("writing the Job manifest: %w", err)
	}
	return b, nil
}
