package spec

import "github.com/goccy/go-yaml/ast"

// traceFields are the trace section's.
var traceFields = []field[*draft]{
	{"data", func(d *decoder, v ast.Node, path string, b *draft) error {
		n, err := d.integer(v, path)
		if err != nil {
			return err
		}
		if n < 0 || n > maxTraceData {
			return d.errf(v, path, "must be between 0 and %d bytes, got %d", maxTraceData, n)
		}
		b.s.Trace.Data = int(n)
		return nil
	}},
}
