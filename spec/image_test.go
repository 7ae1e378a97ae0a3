package spec

import (
	"slices"
	"strings"
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

// A spec loads with its images named, not opened: ResolveImages opens
// each reference once however many nodes name it, folds the images' IDs
// into the digest, checks that each node's program is in its image (an
// error at the node's image: line) and does nothing the second time.
func TestResolveImages(t *testing.T) {
	const src = `name: t
nodes:
  - name: server1
    image: layout:v1
  - name: client1
    role: client
    image: layout:v1
    command: [/bin/missing]
`
	s, err := parse("s.yaml", []byte(src), noHostNets)
	if err != nil {
		t.Fatal(err)
	}
	if s.Nodes[0].Image != s.Nodes[1].Image || s.Nodes[0].Image.Ref != "layout:v1" || s.Nodes[0].Image.Root != "" {
		t.Fatalf("images after parsing: %+v, %+v; want one, named and not opened", s.Nodes[0].Image, s.Nodes[1].Image)
	}
	fileDigest := s.Digest
	opens := 0
	open := func(im *Image) error {
		opens++
		im.ID, im.Root = "sha256:1", "/"
		im.Config.Cmd = []string{"/bin/sh"}
		return nil
	}
	want := "s.yaml:7: nodes[1].image: node client1: program \"/bin/missing\": not found in the image"
	if err := s.ResolveImages(open); err == nil || err.Error() != want {
		t.Fatalf("error %v, want %s", err, want)
	}
	if opens != 1 {
		t.Fatalf("%d opens of one image, want 1", opens)
	}
	s, _ = parse("s.yaml", []byte(strings.Replace(src, "[/bin/missing]", "[/bin/sh]", 1)), noHostNets)
	open = func(im *Image) error {
		opens++
		im.ID, im.Root = "sha256:1", "/"
		im.Config.Cmd = []string{"/bin/sh"}
		return nil
	}
	if err := s.ResolveImages(open); err != nil {
		t.Fatal(err)
	}
	if s.Digest == fileDigest {
		t.Fatal("the digest does not cover the images")
	}
	resolved, opens := s.Digest, 0
	if err := s.ResolveImages(open); err != nil || opens != 0 || s.Digest != resolved {
		t.Fatalf("a second resolution: %v, %d opens, digest changed %v", err, opens, s.Digest != resolved)
	}
}
