package layering

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// readmeMaxLines bounds README.md: a newcomer's page, with the manual in
// docs/usage.md and the figures in docs/results.md.
const readmeMaxLines = 200

// TestReadmeShort: README.md stays a page a newcomer reads.
func TestReadmeShort(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, at most %d: move the detail to docs/ and link it", n, readmeMaxLines)
	}
}

// docFiles are the Markdown files whose links TestDocLinks checks,
// relative to the root: README.md, CHANGELOG.md and docs/*.md.
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	files := []string{"README.md", "CHANGELOG.md"}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(more) == 0 {
		t.Fatal("no docs/*.md")
	}
	for _, m := range more {
		rel, err := filepath.Rel(root, m)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, filepath.ToSlash(rel))
	}
	return files
}

// A Markdown document's links and headings, outside code.
type mdDoc struct {
	links   []mdLink
	anchors map[string]bool
}

type mdLink struct {
	line   int
	target string
}

var (
	inlineLink = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	refLink    = regexp.MustCompile(`^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$`)
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
	htmlAnchor = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
)

// parseMarkdown reads a document's links (inline and reference) and the
// anchors of its headings, skipping fenced code blocks and code spans.
func parseMarkdown(text string) mdDoc {
	d := mdDoc{anchors: map[string]bool{}}
	counts := map[string]int{}
	fenced := false
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			d.anchors[m[1]] = true
		}
		if strings.HasPrefix(line, "#") {
			title := strings.TrimSpace(strings.TrimLeft(line, "#"))
			slug := headingSlug(title)
			if c := counts[slug]; c > 0 {
				d.anchors[fmt.Sprintf("%s-%d", slug, c)] = true
			} else {
				d.anchors[slug] = true
			}
			counts[slug]++
		}
		plain := codeSpan.ReplaceAllStringFunc(line, func(s string) string {
			return strings.Repeat("x", len(s)) // a link's text may be code; its target is not
		})
		for _, m := range inlineLink.FindAllStringSubmatch(plain, -1) {
			d.links = append(d.links, mdLink{line: n, target: m[1]})
		}
		if m := refLink.FindStringSubmatch(plain); m != nil {
			d.links = append(d.links, mdLink{line: n, target: m[1]})
		}
	}
	return d
}

// headingSlug is the anchor GitHub gives a heading: lower case, code
// marks and punctuation dropped, spaces as hyphens.
func headingSlug(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// external says whether a link target leaves the file system (a URL).
func external(target string) bool {
	i := strings.Index(target, ":")
	if i <= 0 {
		return false
	}
	scheme := target[:i]
	for _, r := range scheme {
		if !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '+' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

// checkLinks lists what is wrong with the links of the document at rel
// (relative to root): a relative link that leaves the repository, an
// absolute path, a target that does not exist, an anchor that no heading
// of its Markdown target has.
func checkLinks(root, rel string, docs map[string]mdDoc) []string {
	var bad []string
	d := docs[rel]
	for _, l := range d.links {
		where := fmt.Sprintf("%s:%d: %s", rel, l.line, l.target)
		if external(l.target) {
			continue
		}
		path, anchor, _ := strings.Cut(l.target, "#")
		if strings.HasPrefix(path, "/") {
			bad = append(bad, where+": an absolute path; link relative to the file")
			continue
		}
		target := rel
		if path != "" {
			target = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(rel), path)))
		}
		if target == ".." || strings.HasPrefix(target, "../") {
			bad = append(bad, where+": leaves the repository")
			continue
		}
		st, err := os.Stat(filepath.Join(root, filepath.FromSlash(target)))
		if err != nil {
			bad = append(bad, where+": no such file or directory")
			continue
		}
		if anchor == "" || st.IsDir() || !strings.HasSuffix(target, ".md") {
			continue
		}
		td, ok := docs[target]
		if !ok {
			b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(target)))
			if err != nil {
				bad = append(bad, where+": "+err.Error())
				continue
			}
			td = parseMarkdown(string(b))
			docs[target] = td
		}
		if !td.anchors[anchor] {
			bad = append(bad, where+": no heading of "+target+" has the anchor #"+anchor)
		}
	}
	return bad
}

// TestDocLinks: the links of README.md, CHANGELOG.md and docs/*.md stay
// inside the repository and reach what they name (files and headings),
// and no text sends the reader to a file beside the repository.
func TestDocLinks(t *testing.T) {
	root := repoRoot(t)
	files := docFiles(t, root)
	docs := map[string]mdDoc{}
	texts := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		texts[f] = string(b)
		docs[f] = parseMarkdown(string(b))
	}
	links := 0
	for _, f := range files {
		links += len(docs[f].links)
		for _, b := range checkLinks(root, f, docs) {
			t.Error(b)
		}
		for i, line := range strings.Split(texts[f], "\n") {
			if strings.Contains(line, "../shared/") {
				t.Errorf("%s:%d: names a file outside the repository (../shared/): bring what it says in", f, i+1)
			}
		}
	}
	if links < 20 {
		t.Errorf("found %d links in %v: the parser is broken", links, files)
	}
}

// TestCheckLinks: the link checker resolves links as GitHub does, and
// refuses what leaves the repository or reaches nothing.
func TestCheckLinks(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"README.md", "docs/a.md", "docs/b.md", "bench/results/x.md"} {
		p := filepath.Join(root, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(f, text string) {
		if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(f)), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("bench/results/x.md", "# X\n")
	write("docs/b.md", "# B\n\n## The bug suite (`testdata/bugs`, `make bench-hit`)\n\n## Lockstep's faults (2026-11-24)\n\n## Twice\n\n## Twice\n")
	write("README.md", "# R\n[a](docs/a.md) [x](bench/results/x.md)\n")
	write("docs/a.md", strings.Join([]string{
		"# A",
		"[ok](b.md#the-bug-suite-testdatabugs-make-bench-hit)",
		"[ok](b.md#locksteps-faults-2026-11-24) [ok](b.md#twice-1) [ok](#a) [ok](../README.md)",
		"[ok](../bench/results/) [ok](https://example.org/x) [`code` text](b.md)",
		"`[not a link](../../nowhere)`",
		"```",
		"[not a link](../../nowhere)",
		"```",
		"[out](../../shared/DESIGN.md)",
		"[gone](c.md)",
		"[anchor](b.md#nothing)",
		"[abs](/docs/b.md)",
		"[ref]: ../../../elsewhere.md",
	}, "\n"))
	docs := map[string]mdDoc{}
	for _, f := range []string{"README.md", "docs/a.md"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		docs[f] = parseMarkdown(string(b))
	}
	if bad := checkLinks(root, "README.md", docs); len(bad) != 0 {
		t.Errorf("README.md: %v, want no errors", bad)
	}
	bad := checkLinks(root, "docs/a.md", docs)
	want := []string{
		"docs/a.md:9: ../../shared/DESIGN.md: leaves the repository",
		"docs/a.md:10: c.md: no such file or directory",
		"docs/a.md:11: b.md#nothing: no heading of docs/b.md has the anchor #nothing",
		"docs/a.md:12: /docs/b.md: an absolute path; link relative to the file",
		"docs/a.md:13: ../../../elsewhere.md: leaves the repository",
	}
	if strings.Join(bad, "\n") != strings.Join(want, "\n") {
		t.Errorf("docs/a.md:\n%s\nwant:\n%s", strings.Join(bad, "\n"), strings.Join(want, "\n"))
	}
}
