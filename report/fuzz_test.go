package report_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstep-dev/lockstep/engine"
	"github.com/lockstep-dev/lockstep/explain"
	"github.com/lockstep-dev/lockstep/report"
)

// FuzzShow: a trace file is user input (an edited or truncated trace, one
// from another version): whatever its bytes, reading it, listing it,
// slicing it and drawing it (lockstep show, --slice, --html) end in a
// one-line error or a rendering, never a panic.
func FuzzShow(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "*.trace.jsonl"))
	for _, p := range seeds {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	// Refused ones: not JSON, a record before the header, no header, an
	// unknown fault kind.
	for _, s := range []string{"not json\n", `{"record":{"step":1}}` + "\n", "\n", `{"header":{}}` + "\n" + `{"record":{"step":1,"op":{"kind":"nope"}}}` + "\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := engine.ReadTrace(bytes.NewReader(data), "fuzz.jsonl")
		if err != nil {
			if msg := err.Error(); strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "fuzz.jsonl: ") {
				t.Fatalf("error %q: not one line naming the file", msg)
			}
			return
		}
		report.WriteTrace(io.Discard, tr)
		node := ""
		if tr.Outcome != nil {
			node = tr.Outcome.Node
		}
		steps := explain.Slice(tr.Records, explain.FailingNode(node))
		if err := report.WriteHTMLExplained(io.Discard, tr, report.Explained{Slice: steps}); err != nil {
			t.Fatalf("drawing a trace that reads: %v", err)
		}
	})
}
