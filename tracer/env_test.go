package tracer

import (
	"reflect"
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
	tests := []struct {
		env, want []string
	}{
		{nil, []string{"JAVA_TOOL_OPTIONS=" + opt}},
		{[]string{"A=1"}, []string{"A=1", "JAVA_TOOL_OPTIONS=" + opt}},
		{[]string{"JAVA_TOOL_OPTIONS=-Xmx64m", "B=2"}, []string{"JAVA_TOOL_OPTIONS=-Xmx64m " + opt, "B=2"}},
		{[]string{"JAVA_TOOL_OPTIONS= "}, []string{"JAVA_TOOL_OPTIONS=" + opt}},
		// The node's own choice stands.
		{[]string{"JAVA_TOOL_OPTIONS=-XX:+BackgroundCompilation"}, []string{"JAVA_TOOL_OPTIONS=-XX:+BackgroundCompilation"}},
	}
	for _, tt := range tests {
		if got := withJavaToolOption(tt.env, "BackgroundCompilation", opt); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("withJavaToolOption(%q) = %q, want %q", tt.env, got, tt.want)
		}
	}
}
