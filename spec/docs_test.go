package spec

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocsNameEveryField: docs/spec.md's format block names every field
// the decoder accepts (as "name:" in its YAML), so a field cannot be added
// (or stay, as ready: did) without its documentation. The fields are read
// from the decoder's own lists: its tables of fields and its d.fields
// calls.
func TestDocsNameEveryField(t *testing.T) {
	doc, err := os.ReadFile(repoPath("docs", "spec.md"))
	if err != nil {
		t.Fatal(err)
	}
	block := string(doc)
	if i, j := strings.Index(block, "```yaml"), strings.Index(block, "\n## Timing"); i >= 0 && j > i {
		block = block[i:j] // the format block at the top
	} else {
		t.Fatal("docs/spec.md: no format block before ## Timing")
	}
	call := regexp.MustCompile(`d\.fields\([^,]+, [^,]+((?:, "[a-z_]+")+)\)`)
	lit := regexp.MustCompile(`"([a-z_]+)"`)
	table := regexp.MustCompile(`(?s)= \[\]field\[[^\]]+\]\{\n(.*?)\n\}\n`)
	row := regexp.MustCompile(`(?m)^\t\{"([a-z_]+)", `)
	srcs, _ := filepath.Glob("*.go")
	seen := 0
	for _, src := range srcs {
		if strings.HasSuffix(src, "_test.go") {
			continue
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		var fields []string
		for _, m := range call.FindAllStringSubmatch(string(b), -1) {
			for _, f := range lit.FindAllStringSubmatch(m[1], -1) {
				fields = append(fields, f[1])
			}
		}
		for _, m := range table.FindAllStringSubmatch(string(b), -1) {
			for _, f := range row.FindAllStringSubmatch(m[1], -1) {
				fields = append(fields, f[1])
			}
		}
		for _, f := range fields {
			seen++
			if !regexp.MustCompile(`[\s{,]` + f + `:`).MatchString(block) {
				t.Errorf("%s: field %q is not in docs/spec.md's format block", src, f)
			}
		}
	}
	if seen < 50 {
		t.Fatalf("read only %d fields from the decoder", seen)
	}
}
