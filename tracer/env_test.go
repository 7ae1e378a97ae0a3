package tracer

import (
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestWithGodebug(t *testing.T) {
	tests := []struct {
		env, want []string
	}{
		{nil, []string{"GODEBUG=asyncpreemptoff=1"}},
		{[]string{"A=1"}, []string{"A=1", "GODEBUG=asyncpreemptoff=1"}},
		{[]string{"GODEBUG=madvdontneed=1", "B=2"}, []string{"GODEBUG=madvdontneed=1,asyncpreemptoff=1", "B=2"}},
		{[]string{"GODEBUG="}, []string{"GODEBUG=asyncpreemptoff=1"}},
	}
	for _, tt := range tests {
		if got := withGodebug(tt.env, "asyncpreemptoff=1"); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("withGodebug(%q) = %q, want %q", tt.env, got, tt.want)
		}
	}
}

func TestWithDefaultEnv(t *testing.T) {
	tests := []struct {
		env, want []string
	}{
		{nil, []string{"GOMAXPROCS=1"}},
		{[]string{"A=1"}, []string{"A=1", "GOMAXPROCS=1"}},
		{[]string{"GOMAXPROCS=4", "B=2"}, []string{"GOMAXPROCS=4", "B=2"}},
		{[]string{"GOMAXPROCSX=4"}, []string{"GOMAXPROCSX=4", "GOMAXPROCS=1"}},
	}
	for _, tt := range tests {
		if got := withDefaultEnv(tt.env, "GOMAXPROCS", "1"); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("withDefaultEnv(%q) = %q, want %q", tt.env, got, tt.want)
		}
	}
}

func TestWithJavaToolOption(t *testing.T) {
	const opt = "-XX:-BackgroundCompilation"
	flags := []string{"BackgroundCompilation"}
	thresholds := []string{"CompileThreshold", "Tier3CompileThreshold"}
	tests := []struct {
		env   []string
		flags []string
		want  []string
	}{
		{nil, flags, []string{"JAVA_TOOL_OPTIONS=" + opt}},
		{[]string{"A=1"}, flags, []string{"A=1", "JAVA_TOOL_OPTIONS=" + opt}},
		{[]string{"JAVA_TOOL_OPTIONS=-Xmx64m", "B=2"}, flags, []string{"JAVA_TOOL_OPTIONS=-Xmx64m " + opt, "B=2"}},
		{[]string{"JAVA_TOOL_OPTIONS= "}, flags, []string{"JAVA_TOOL_OPTIONS=" + opt}},
		// The node's own choice stands.
		{[]string{"JAVA_TOOL_OPTIONS=-XX:+BackgroundCompilation"}, flags, []string{"JAVA_TOOL_OPTIONS=-XX:+BackgroundCompilation"}},
		{[]string{"JAVA_TOOL_OPTIONS=-Xint -XX:-BackgroundCompilation"}, flags, []string{"JAVA_TOOL_OPTIONS=-Xint -XX:-BackgroundCompilation"}},
		{[]string{"JAVA_TOOL_OPTIONS=-XX:Tier3CompileThreshold=5"}, thresholds, []string{"JAVA_TOOL_OPTIONS=-XX:Tier3CompileThreshold=5"}},
		// A name holding another's is not the other, nor is a value.
		{[]string{"JAVA_TOOL_OPTIONS=-XX:Tier3CompileThresholdX=5"}, thresholds, []string{"JAVA_TOOL_OPTIONS=-XX:Tier3CompileThresholdX=5 " + opt}},
		{[]string{"JAVA_TOOL_OPTIONS=-Dname=BackgroundCompilation"}, flags, []string{"JAVA_TOOL_OPTIONS=-Dname=BackgroundCompilation " + opt}},
	}
	for _, tt := range tests {
		if got := withJavaToolOption(tt.env, tt.flags, opt); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("withJavaToolOption(%q, %q) = %q, want %q", tt.env, tt.flags, got, tt.want)
		}
	}
}

// TestJVMOptionsStart starts the JVM on the machine with every option
// lockstep adds: one it refused would keep every traced JVM from starting.
func TestJVMOptionsStart(t *testing.T) {
	java := lookPathOrSkip(t, "java")
	env := environWithout("JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS")
	for _, o := range jvmOptions {
		env = withJavaToolOption(env, o.flags, o.option)
	}
	cmd := exec.Command(java, "-XX:+PrintFlagsFinal", "-version")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("java with lockstep's options: %v\n%s", err, out)
	}
	for _, o := range jvmOptions {
		for _, opt := range strings.Fields(o.option) {
			name, value, _ := strings.Cut(strings.TrimPrefix(opt, "-XX:"), "=")
			if strings.HasPrefix(name, "-") {
				name, value = name[1:], "false"
			}
			// JDK 8 marks a value set with ":=", later JDKs with "{environment}".
			re := regexp.MustCompile(`(?m)^\s*\S+\s+` + name + `\s+:?=\s+` + value + `\s`)
			if !re.Match(out) {
				t.Errorf("java did not take %s from JAVA_TOOL_OPTIONS", opt)
			}
		}
	}
}

// TestBEAMFlagsStart starts the Erlang VM on the machine with lockstep's
// ERL_AFLAGS: a flag it refused would keep every traced VM from starting.
// The node's own flags come later and win.
func TestBEAMFlagsStart(t *testing.T) {
	erl := lookPathOrSkip(t, "erl")
	base := environWithout("ERL_AFLAGS", "ERL_FLAGS", "ERL_ZFLAGS")
	const show = `io:format("~p~n", [[erlang:system_info(K) || K <- [schedulers, dirty_cpu_schedulers, dirty_io_schedulers]]]), halt().`
	tests := []struct {
		env  []string
		args []string
		want string
	}{
		{withDefaultEnv(base, "ERL_AFLAGS", beamFlags), nil, "[1,1,1]"},
		{withDefaultEnv(base, "ERL_AFLAGS", beamFlags), []string{"+S", "2:2"}, "[2,1,1]"},
		{withDefaultEnv(append(base, "ERL_FLAGS=+SDio 3"), "ERL_AFLAGS", beamFlags), nil, "[1,1,3]"},
	}
	for _, tt := range tests {
		cmd := exec.Command(erl, append(append([]string{"-noshell"}, tt.args...), "-eval", show)...)
		cmd.Env = tt.env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("erl %q with lockstep's ERL_AFLAGS: %v\n%s", tt.args, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != tt.want {
			t.Errorf("erl %q: schedulers, dirty CPU and dirty I/O schedulers %s, want %s", tt.args, got, tt.want)
		}
	}
}

func lookPathOrSkip(t *testing.T, prog string) string {
	t.Helper()
	path, err := exec.LookPath(prog)
	if err != nil {
		t.Skipf("no %s on PATH", prog)
	}
	return path
}

// environWithout is this process's environment without the variables
// named, which would change what a VM started from it picks up.
func environWithout(names ...string) []string {
	var env []string
	for _, e := range os.Environ() {
		name, _, _ := strings.Cut(e, "=")
		if !slices.Contains(names, name) {
			env = append(env, e)
		}
	}
	return env
}
