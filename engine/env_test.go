package engine

import (
	"reflect"
	"testing"
)

// A spec's env entry replaces the base entry of the same name instead of
// adding a second one that some programs would read and others not.
func TestNodeEnv(t *testing.T) {
	t.Setenv("JAVA_HOME", "")
	base := baseEnv()
	tests := []struct {
		name string
		spec []string
		want []string
	}{
		{"none", nil, base},
		{"added", []string{"FOO=1"}, append(append([]string(nil), base...), "FOO=1")},
		{"replaces PATH", []string{"PATH=/opt/bin"}, append([]string{"PATH=/opt/bin"}, base[1:]...)},
		{"prefix is not a match", []string{"PATHS=x"}, append(append([]string(nil), base...), "PATHS=x")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := nodeEnv(tt.spec); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}
