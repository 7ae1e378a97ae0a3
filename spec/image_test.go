package spec

import (
	"slices"
	"testing"

	v1 "github.com/opencontainers/image-spec/specs-go/v1"
)

// An image node's command is built as Docker builds it: command: replaces
// CMD, entrypoint: replaces ENTRYPOINT and drops CMD; the spec's env wins
// over the image's; the image's values are not templates.
func TestImageCommand(t *testing.T) {
	im := &Image{Ref: "x", Config: v1.ImageConfig{
		Entrypoint: []string{"/entry", "{{literal}}"}, Cmd: []string{"serve"},
		Env: []string{"PATH=/bin", "A=image", "B=image"}, WorkingDir: "data",
	}}
	for _, c := range []struct {
		name       string
		entry, cmd []string
		want       []string
	}{
		{"image", nil, nil, []string{"/entry", "{{literal}}", "serve"}},
		{"command", nil, []string{"run", "{{node}}"}, []string{"/entry", "{{literal}}", "run", "n1"}},
		{"entrypoint", []string{"/other"}, nil, []string{"/other"}},
		{"both", []string{"/other"}, []string{"x"}, []string{"/other", "x"}},
		{"empty entrypoint", []string{}, []string{"/bin/x"}, []string{"/bin/x"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &Spec{Nodes: []Node{{Name: "n1", Image: im, Entrypoint: c.entry, Command: c.cmd, Env: map[string]string{"A": "spec"}}}}
			argv, env, wd, err := s.Expand("n1", TemplateVars{NodeDir: "/t/n1"})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(argv, c.want) {
				t.Errorf("argv %q, want %q", argv, c.want)
			}
			if want := []string{"PATH=/bin", "B=image", "A=spec"}; !slices.Equal(env, want) {
				t.Errorf("env %q, want %q", env, want)
			}
			if wd != "/data" {
				t.Errorf("workdir %q, want /data", wd)
			}
		})
	}
}
