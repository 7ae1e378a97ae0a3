package sched

import (
	"bytes"
	"strings"
	"testing"
)

// TestTraceData: a record's first bytes survive the round trip, a trace
// written before records had them still loads, and show quotes them.
func TestTraceData(t *testing.T) {
	old := `{"header":{"version":"0.1.0","spec":"s.yaml","seed":1,"strategy":"pos"}}
{"record":{"step":1,"vtime":0,"op":{"id":3,"node":"a","lpid":"a/0/t0","kind":"send","bytes":5}}}
`
	tr, err := ReadTrace(strings.NewReader(old))
	if err != nil || len(tr.Records) != 1 || tr.Records[0].Data != nil {
		t.Fatalf("old trace: %v, %+v", err, tr)
	}
	var b bytes.Buffer
	w := NewTraceWriter(&b)
	w.WriteHeader(tr.Header)
	rec := tr.Records[0]
	rec.Data = []byte("LOCK\n\x00\xff")
	rec.Op.Bytes = 40
	w.WriteRecord(rec)
	w.Flush()
	back, err := ReadTrace(&b)
	if err != nil || !bytes.Equal(back.Records[0].Data, rec.Data) {
		t.Fatalf("round trip: %v, %q", err, back.Records[0].Data)
	}
	for _, c := range []struct {
		data []byte
		n    int
		want string
	}{
		{[]byte("LOCK\n"), 5, `"LOCK\n"`},
		{[]byte("LOCK\n\x00\xff"), 40, `"LOCK\n\x00\xff"…`},
		{[]byte("é"), 2, `"é"`},
	} {
		if got := FormatData(c.data, c.n); got != c.want {
			t.Errorf("FormatData(%q, %d) = %s, want %s", c.data, c.n, got, c.want)
		}
	}
	if line := FormatRecord(back.Records[0]); !strings.HasSuffix(line, `"LOCK\n\x00\xff"…`) {
		t.Errorf("show line %q does not end with the data", line)
	}
}
