package report

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-dev/lockstep/coverage"
	"github.com/lockstep-dev/lockstep/sched"
)

// dom is what a page's elements say about the diagram.
type dom struct {
	lanes    map[string]bool // g.lane data-node
	ops      map[string]int  // g.op data-id → count
	kinds    map[string]int  // op class k-KIND → count
	arrows   map[string]int  // path.arrow's second class → count
	edges    map[[2]string]bool
	outcome  string // #outcome's text
	scriptOK string // data-arrows on <html>, set by the page's script
	external []string
}

// parseDOM reads an HTML page leniently (as a browser would: HTML void
// elements and entities allowed) and collects the diagram's elements.
func parseDOM(t *testing.T, r io.Reader) *dom {
	t.Helper()
	d := &dom{lanes: map[string]bool{}, ops: map[string]int{}, kinds: map[string]int{}, arrows: map[string]int{}, edges: map[[2]string]bool{}}
	dec := xml.NewDecoder(r)
	dec.Strict, dec.AutoClose, dec.Entity = false, xml.HTMLAutoClose, xml.HTMLEntity
	inOutcome, inTitle := 0, false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("parsing the page: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			attr := map[string]string{}
			for _, a := range el.Attr {
				attr[a.Name.Local] = a.Value
			}
			if inOutcome > 0 {
				inOutcome++
			}
			inTitle = el.Name.Local == "title"
			class := strings.Fields(attr["class"])
			has := func(c string) bool { return len(class) > 0 && class[0] == c }
			switch {
			case el.Name.Local == "html":
				d.scriptOK = attr["data-arrows"]
			case has("lane"):
				d.lanes[attr["data-node"]] = true
			case has("op"):
				d.ops[attr["data-id"]]++
				d.kinds[strings.TrimPrefix(class[1], "k-")]++
			case has("arrow"):
				d.arrows[class[1]]++
				d.edges[[2]string{attr["data-from"], attr["data-to"]}] = true
			case attr["id"] == "outcome":
				inOutcome = 1
			}
			for _, k := range []string{"src", "href"} {
				if v := attr[k]; v != "" {
					d.external = append(d.external, v)
				}
			}
		case xml.EndElement:
			if inOutcome > 0 {
				inOutcome--
			}
			inTitle = false
		case xml.CharData:
			if inOutcome > 0 && !inTitle {
				d.outcome += string(el)
			}
		}
	}
	return d
}

// expect checks a parsed page against its trace: a lane per node, one
// mark per op, an arrow per cause (message arrows for deliveries and the
// recvs that consumed them), the outcome, nothing loaded from elsewhere.
func (d *dom) expect(t *testing.T, tr *sched.Trace) {
	t.Helper()
	ids := map[uint64]bool{}
	kinds := map[string]int{}
	msgs, consumes := 0, 0
	for _, r := range tr.Records {
		if !d.lanes[r.Op.Node] {
			t.Errorf("no lane for node %s (lanes %v)", r.Op.Node, d.lanes)
		}
		ids[r.Op.ID] = true
		kinds[r.Op.Kind.String()]++
		if n := d.ops[strconv.FormatUint(r.Op.ID, 10)]; n != 1 {
			t.Errorf("op #%d (step %d) has %d marks, want 1", r.Op.ID, r.Step, n)
		}
		for _, c := range r.Causes {
			if !d.edges[[2]string{strconv.FormatUint(c, 10), strconv.FormatUint(r.Op.ID, 10)}] {
				t.Errorf("no arrow #%d → #%d (step %d, %s)", c, r.Op.ID, r.Step, r.Op.Kind)
			}
			switch r.Op.Kind {
			case sched.Deliver:
				msgs++
			case sched.Recv:
				consumes++
			}
		}
	}
	if len(d.ops) != len(tr.Records) {
		t.Errorf("%d op marks, want %d", len(d.ops), len(tr.Records))
	}
	for k, n := range kinds {
		if d.kinds[k] != n {
			t.Errorf("%d %s marks, want %d", d.kinds[k], k, n)
		}
	}
	if d.arrows["msg"] != msgs || d.arrows["consume"] != consumes {
		t.Errorf("arrows %v, want %d send→deliver and %d deliver→recv", d.arrows, msgs, consumes)
	}
	if tr.Outcome != nil && !strings.Contains(d.outcome, "Outcome: "+string(tr.Outcome.Kind)) {
		t.Errorf("outcome %q, want %s", d.outcome, tr.Outcome.Kind)
	}
	if len(d.external) > 0 {
		t.Errorf("the page loads %v", d.external)
	}
}

func renderHTML(t *testing.T, tr *sched.Trace) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := WriteHTML(&b, tr); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestHTML checks the diagram's elements for real traces: a deadlock of
// the bug suite, a crash and restart, a timer advance.
func TestHTML(t *testing.T) {
	for _, tc := range []struct {
		name       string
		wantKinds  []string // marks that must be there
		wantArrows []string
	}{
		{"locks-1", []string{"send", "deliver", "recv", "accept"}, []string{"msg", "consume", "cause"}},
		{"pingpong-crash", []string{"crash", "restart", "deliver"}, []string{"msg", "consume"}},
		{"timeout-c", []string{"advance"}, []string{"msg"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := loadTrace(t, "testdata/"+tc.name+".trace.jsonl")
			page := renderHTML(t, tr)
			d := parseDOM(t, bytes.NewReader(page))
			if tc.name != "timeout-c" { // its only message is never received
				d.expect(t, tr)
			}
			for _, k := range tc.wantKinds {
				if d.kinds[k] == 0 {
					t.Errorf("no %s mark", k)
				}
			}
			for _, a := range tc.wantArrows {
				if d.arrows[a] == 0 {
					t.Errorf("no %s arrow (%v)", a, d.arrows)
				}
			}
		})
	}
}

// TestHTMLInFlight: a send no delivery cites is drawn running into its
// destination's inbox (the demo's bug: LOCK still in flight).
func TestHTMLInFlight(t *testing.T) {
	rec := func(step int, id uint64, node string, kind sched.Kind, conn, obj string, causes ...uint64) sched.Record {
		return sched.Record{Step: step, Op: sched.Op{ID: id, Node: node, LPID: node + "/0/t0", Kind: kind, Conn: conn, Object: obj, Bytes: 5}, Causes: causes}
	}
	tr := &sched.Trace{Records: []sched.Record{
		rec(1, 1, "server", sched.Accept, "", "listen:10.77.0.1:7000"),
		rec(2, 2, "client", sched.Send, "10.77.0.2:4000>10.77.0.1:7000", ""),
		rec(3, 3, "client", sched.Send, "10.77.0.2:4000>10.77.0.1:7000", ""),
		rec(4, 4, "client", sched.Deliver, "10.77.0.2:4000>10.77.0.1:7000", "inbox:server", 3),
		rec(5, 5, "server", sched.Recv, "10.77.0.2:4000>10.77.0.1:7000", "inbox:server", 4),
	}, Outcome: &sched.Outcome{Kind: "client-failed"}}
	d := newDiagram(tr)
	if len(d.inFlight) != 1 || d.inFlight[0] != 1 || d.dest[1] != "server" {
		t.Fatalf("in flight %v to %v, want row 1 to server", d.inFlight, d.dest)
	}
	// The delivery sits in the receiver's inbox, not the sender's lane.
	if x, _ := d.opPoint(3); x != d.byNode["server"].center(inboxLane) {
		t.Errorf("deliver at x=%d, want the server's inbox", x)
	}
	page := string(renderHTML(t, tr))
	if n := strings.Count(page, `class="arrow inflight" data-from="2"`); n != 1 {
		t.Errorf("%d in-flight arrows from #2, want 1", n)
	}
	parseDOM(t, strings.NewReader(page)).expect(t, tr)
}

// TestHTMLLarge: a 1,200-op trace gets a row per op (the page scrolls) and
// stays a reasonable size.
func TestHTMLLarge(t *testing.T) {
	base := loadTrace(t, "testdata/locks-1.trace.jsonl")
	tr := &sched.Trace{Header: base.Header, Outcome: base.Outcome}
	offset := uint64(0)
	for len(tr.Records) < 1200 {
		for _, r := range base.Records {
			r.Op.ID += offset
			causes := make([]uint64, len(r.Causes))
			for i, c := range r.Causes {
				causes[i] = c + offset
			}
			r.Causes = causes
			r.Step = len(tr.Records) + 1
			tr.Records = append(tr.Records, r)
		}
		offset += 1 << 20
	}
	page := renderHTML(t, tr)
	parseDOM(t, bytes.NewReader(page)).expect(t, tr)
	if d := newDiagram(tr); d.height < len(tr.Records)*rowH {
		t.Errorf("height %d for %d ops", d.height, len(tr.Records))
	}
	if len(page) > 1500*len(tr.Records) {
		t.Errorf("%d bytes for %d ops", len(page), len(tr.Records))
	}
}

// TestHTMLEscapes: names from the trace cannot break out of the markup.
func TestHTMLEscapes(t *testing.T) {
	tr := &sched.Trace{Header: sched.Header{Spec: "<b>spec</b>"}, Records: []sched.Record{
		{Step: 1, Op: sched.Op{ID: 1, Node: `n"<x>`, LPID: `n"<x>/0/t0`, Kind: sched.Poll, Syscall: "<script>"}},
	}, Outcome: &sched.Outcome{Kind: "client-failed", Detail: "</svg><script>alert(1)</script>"}}
	page := string(renderHTML(t, tr))
	if strings.Contains(page, "<script>alert") || strings.Contains(page, "<b>spec") || strings.Contains(page, `"<x>`) {
		t.Fatalf("unescaped trace text in the page")
	}
	parseDOM(t, strings.NewReader(page)).expect(t, tr)
}

// TestHTMLInChromium loads the diagram of a bug-suite failure (locks-1's
// deadlock, from a real run) in headless Chromium: the screenshot must
// exist and show a drawing, and the DOM the browser built must hold a lane
// per node, one mark per op, the arrows and the outcome, with the page's
// script run.
func TestHTMLInChromium(t *testing.T) {
	chromium := requireChromium(t)
	tr := loadTrace(t, "testdata/locks-1.trace.jsonl")
	dir := t.TempDir()
	page := filepath.Join(dir, "locks-1.html")
	if err := os.WriteFile(page, renderHTML(t, tr), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) []byte { return chromium(page, args...) }

	shot := filepath.Join(dir, "locks-1.png")
	run("--screenshot="+shot, "--window-size=1400,1000")
	if out := os.Getenv("LOCKSTEP_SCREENSHOT"); out != "" {
		// For a person to look at.
		if b, err := os.ReadFile(shot); err == nil {
			os.WriteFile(out, b, 0o644)
		}
	}
	checkScreenshot(t, shot)

	d := parseDOM(t, bytes.NewReader(run("--dump-dom")))
	d.expect(t, tr)
	if d.arrows["msg"] == 0 || d.arrows["consume"] == 0 {
		t.Errorf("arrows %v: want messages and their consumption", d.arrows)
	}
	if want := strconv.Itoa(d.arrows["msg"] + d.arrows["consume"] + d.arrows["cause"] + d.arrows["inflight"]); d.scriptOK != want {
		t.Errorf("the page's script counted %q arrows, want %s", d.scriptOK, want)
	}
}

// requireChromium skips the test unless Chromium is installed, and returns
// what runs it headless, in a profile of its own, on the page at path with
// args, and returns what it printed.
func requireChromium(t *testing.T) func(path string, args ...string) []byte {
	t.Helper()
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed (Debian: apt-get install chromium); skipping the browser test")
	}
	return func(path string, args ...string) []byte {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		args = append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
			"--user-data-dir=" + t.TempDir()}, append(args, "file://"+path)...)
		var stdout, stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, chromium, args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
		}
		return stdout.Bytes()
	}
}

// checkScreenshot fails unless the PNG is the window's size and drawn on:
// many colours, a good share of pixels not background, and the outcome's
// red among them.
func checkScreenshot(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	b := img.Bounds()
	if b.Dx() != 1400 || b.Dy() != 1000 {
		t.Errorf("screenshot is %v, want 1400x1000", b.Size())
	}
	colours := map[[3]uint32]bool{}
	inked, reddish := 0, 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			r, g, bl = r>>8, g>>8, bl>>8
			colours[[3]uint32{r, g, bl}] = true
			if r < 235 || g < 235 || bl < 235 {
				inked++
			}
			if r > 120 && r > g+60 && r > bl+60 {
				reddish++
			}
		}
	}
	total := b.Dx() * b.Dy()
	if len(colours) < 50 || inked < total/20 || reddish == 0 {
		t.Errorf("screenshot looks blank: %d colours, %d of %d pixels drawn, %d red", len(colours), inked, total, reddish)
	}
}

// TestOpLabel: a pause, drift or clock fault's label says its size, any
// other fault its name (and whether the quiet period brought it).
func TestOpLabel(t *testing.T) {
	for _, tc := range []struct {
		rec  sched.Record
		want string
	}{
		{sched.Record{Op: sched.Op{Kind: "pause", Delay: int64(300 * time.Millisecond)}}, "pause 300ms"},
		{sched.Record{Op: sched.Op{Kind: "drift", Delay: -2500}}, "drift -0.25%"},
		{sched.Record{Op: sched.Op{Kind: "clock", Delay: int64(2 * time.Second)}}, "clock 2s"},
		{sched.Record{Op: sched.Op{Kind: "crash", Delay: int64(time.Second)}}, "crash"},
		{sched.Record{Op: sched.Op{Kind: "restart"}, Auto: true}, "restart (quiet)"},
		{sched.Record{Op: sched.Op{Kind: sched.Advance, Delay: int64(time.Second)}}, "advance +1s"},
		// A message whose bytes are text is labelled with them, one
		// whose bytes are not with its kind (its first bytes say
		// nothing); without a kind, the bytes.
		{sched.Record{Op: sched.Op{Kind: sched.Deliver}, Data: []byte("LOCK 1\n")}, `deliver "LOCK 1\n"`},
		{sched.Record{Op: sched.Op{Kind: sched.Deliver, Bytes: 45}, Data: []byte(distLink)}, `deliver 45B k1 "⟨len⟩dist LINK"`},
		{sched.Record{Op: sched.Op{Kind: sched.Send, Syscall: "writev"}, Result: 45, Data: []byte(distLink)}, `send writev k1 "⟨len⟩dist LINK"`},
	} {
		ks := coverage.NewKinds()
		if got := opLabel(&tc.rec, ks.Classify(":7000", tc.rec.Data, sched.DataLen(&tc.rec))); got != tc.want {
			t.Errorf("opLabel(%v) = %q, want %q", tc.rec.Op.Kind, got, tc.want)
		}
	}
	if got := opLabel(&sched.Record{Op: sched.Op{Kind: sched.Deliver, Bytes: 45}, Data: []byte(distLink)}, nil); got != `deliver 45B "\x00\x00\x00)\x83D\x02G\x00?\xd6h"…` {
		t.Errorf("opLabel of a binary message with no kind = %q, want its first 12 bytes", got)
	}
}

// distLink is the first 32 bytes of a message between two Erlang VMs
// (Mnesia's, examples/mnesia): its length, the external term format's
// version, a distribution header with two atom cache references, and the
// control message {1 (LINK), FromPid, ToPid}, cut.
const distLink = "\x00\x00\x00)\x83D\x02G\x00?\xd6h\x03a\x01XR\x00\x00\x00\x00]\x00\x00\x00\x00e\x92\x00\x81XR"

// TestOpTitleKind: an op's hover text names its message's kind.
func TestOpTitleKind(t *testing.T) {
	r := sched.Record{Op: sched.Op{Kind: sched.Deliver, Node: "a", Bytes: 45}, Data: []byte(distLink)}
	k := coverage.NewKinds().Classify(":7000", r.Data, sched.DataLen(&r))
	if got := opTitle(&r, k); !strings.Contains(got, "\nkind: k1 \"⟨len⟩dist LINK\"") {
		t.Errorf("opTitle = %q, want a line naming its kind", got)
	}
}
