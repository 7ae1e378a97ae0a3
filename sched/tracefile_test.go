package sched

import (
	"bytes"
	"slices"
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

// TestTraceShape: a made fault's shape survives the round trip whatever
// its bytes (msgpack's 0xa0, an empty string, is no UTF-8), and a text shape is
// written as it is.
func TestTraceShape(t *testing.T) {
	for _, c := range []struct {
		shape Bytes
		raw   string // how the trace line holds it
	}{
		{"APPEND", `"shape":"APPEND"`},
		{"\xa0{Addr:s Granted:b …", `"shape":"\"\\xa0{Addr:s Granted:b …\""`},
		{`"quoted"`, `"shape":"\"\\\"quoted\\\"\""`},
		{"\x93\x01\xc4", `"shape":"\"\\x93\\x01\\xc4\""`},
		{"\ufffd{Term:u}", `"shape":"\"�{Term:u}\""`},
	} {
		var b bytes.Buffer
		w := NewTraceWriter(&b)
		w.WriteHeader(Header{Version: "0.1.0", Spec: "s.yaml"})
		w.WriteRecord(Record{Step: 1, Op: Op{ID: 1, LPID: "fault", Kind: "hold", Shape: c.shape}})
		w.Flush()
		if !strings.Contains(b.String(), c.raw) {
			t.Errorf("shape %q written as %s, want %s", c.shape, b.String(), c.raw)
		}
		back, err := ReadTrace(&b)
		if err != nil {
			t.Fatal(err)
		}
		if got := back.Records[0].Op.Shape; got != c.shape || back.Lossy != nil {
			t.Errorf("shape %q came back as %q (lossy at %v)", c.shape, got, back.Lossy)
		}
	}
	// A trace written before shapes were quoted: kept as it was.
	old := `{"header":{"version":"0.1.0","spec":"s.yaml"}}
{"record":{"step":1,"vtime":0,"op":{"id":1,"lpid":"fault","kind":"hold","shape":"\"GET"}}}
`
	tr, err := ReadTrace(strings.NewReader(old))
	if err != nil || tr.Records[0].Op.Shape != `"GET` || tr.Lossy != nil {
		t.Errorf("old trace: %v, %+v", err, tr)
	}
	// One whose binary shape lost its bytes: read, and marked lossy, so
	// that a replay refuses it rather than diverge.
	lossy := `{"header":{"version":"0.1.0","spec":"s.yaml"}}
{"record":{"step":7,"vtime":0,"op":{"id":1,"lpid":"fault","kind":"hold","shape":"\ufffd{Addr:s Granted:b …"}}}
`
	tr, err = ReadTrace(strings.NewReader(lossy))
	if err != nil || !slices.Equal(tr.Lossy, []int{7}) {
		t.Errorf("lossy trace: %v, lossy at %v, want step 7", err, tr.Lossy)
	}
}
