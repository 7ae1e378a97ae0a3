package spec

import (
	"strings"
	"testing"

	"github.com/goccy/go-yaml/parser"
)

func decodeCheckerModel(t *testing.T, src string) (*HistoryCheck, error) {
	t.Helper()
	f, err := parser.ParseBytes([]byte(src), 0)
	if err != nil {
		t.Fatal(err)
	}
	d := &decoder{file: "spec.yaml"}
	pairs, err := d.fields(f.Docs[0].Body, "checker", "command", "timeout", "model", "history")
	if err != nil {
		return nil, err
	}
	return d.checkerModel(f.Docs[0].Body, pairs)
}

func TestCheckerModel(t *testing.T) {
	for _, tc := range []struct {
		src     string
		want    *HistoryCheck
		wantErr string
	}{
		{src: "{model: kv, history: history.jsonl, timeout: 10s}", want: &HistoryCheck{Model: "kv", History: "history.jsonl"}},
		{src: "model: set", want: &HistoryCheck{Model: "set", History: DefaultHistoryFile}},
		{src: "model: register\nhistory: out/ops.jsonl", want: &HistoryCheck{Model: "register", History: "out/ops.jsonl"}},
		{src: "command: [/bin/true]", want: nil},
		{src: "model: queue", wantErr: `spec.yaml:1: checker.model: unknown model "queue" (want register, kv, set)`},
		{src: "model: 3", wantErr: "checker.model: must be a string"},
		{src: "model: kv\nhistory: /tmp/h.jsonl", wantErr: "spec.yaml:2: checker.history: must be a file name relative"},
		{src: "model: kv\nhistory: ../server/h.jsonl", wantErr: "checker.history: must be a file name relative"},
		{src: "command: [x]\nhistory: h.jsonl", wantErr: "spec.yaml:2: checker.history: only applies with checker.model"},
	} {
		t.Run(tc.src, func(t *testing.T) {
			got, err := decodeCheckerModel(t, tc.src)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
