// Package k8s writes the Kubernetes manifest of a sharded campaign: an
// Indexed Job whose pods each run one shard (`lockstep run --shard N`,
// the index from JOB_COMPLETION_INDEX) into a shared volume, for
// `lockstep merge` to join. It writes YAML from its own small types, so
// the lockstep binary does not carry the Kubernetes API packages; a test
// decodes the output strictly into those packages' batch/v1 Job.
package k8s
