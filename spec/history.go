package spec

import (
	"path/filepath"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// DefaultHistoryFile is the file each client writes in its {{tmp}} unless
// checker.history names another.
const DefaultHistoryFile = "history.jsonl"

// HistoryCheck is the history half of a spec's checker section:
//
//	checker: {model: kv, history: history.jsonl, timeout: 10s}
//
// checker.timeout (Spec.Checker.Timeout) bounds the check.
type HistoryCheck struct {
	Model   string // one of ModelNames
	History string // a file name, relative to each node's {{tmp}}
}

// checkerModel decodes checker.model and checker.history from the checker
// mapping's pairs (other keys are d.checker's). It returns nil if the
// section names no model.
func (d *decoder) checkerModel(n ast.Node, pairs []kv) (*HistoryCheck, error) {
	hc := &HistoryCheck{History: DefaultHistoryFile}
	var haveModel bool
	var historyNode ast.Node
	for _, q := range pairs {
		f := "checker." + q.key
		switch q.key {
		case "model":
			v, err := d.str(q.value, f)
			if err != nil {
				return nil, err
			}
			if err := checkModel(v); err != nil {
				return nil, d.errf(q.value, f, "%v", err)
			}
			hc.Model, haveModel = v, true
		case "history":
			v, err := d.str(q.value, f)
			if err != nil {
				return nil, err
			}
			// A plain relative name: every node's directory is the
			// trial's, and a path leaving it would read another node's.
			if v == "" || filepath.IsAbs(v) || !filepath.IsLocal(v) || strings.Contains(v, "{{") {
				return nil, d.errf(q.value, f, "must be a file name relative to each node's {{tmp}}, got %q", v)
			}
			hc.History, historyNode = filepath.Clean(v), q.value
		}
	}
	if !haveModel {
		if historyNode != nil {
			return nil, d.errf(historyNode, "checker.history", "only applies with checker.model")
		}
		return nil, nil
	}
	return hc, nil
}
