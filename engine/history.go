package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/lockstep-dev/lockstep/history"
	"github.com/lockstep-dev/lockstep/spec"
)

// NotLinearizable: the clients' merged history has no linearization under
// the spec's checker model (docs/history.md).
const NotLinearizable OutcomeKind = "not-linearizable"

// HistoryVisualization is the file, in the trial directory, that holds
// porcupine's drawing of a violation or of a check that timed out.
const HistoryVisualization = "history.html"

// checkHistories merges the history every node of a passing trial wrote
// to hc.History in its directory (trialDir/<node>/; nodes that wrote none
// are servers) and checks it against hc.Model within sp.Checker.Timeout.
// It returns failed true with a NotLinearizable outcome for a violation,
// and a CheckerFailed outcome for a missing or malformed history (a
// client's bug); the caller copies Kind and Detail into the trial's
// outcome and keeps its Steps and VTime. A check that timed out is not a
// failure: failed is false and the outcome's Detail says so, for the
// caller to report. On a violation or a timeout the visualization is
// written to trialDir/history.html and its path is in the Detail. err is
// lockstep's own failure (reading the files, writing the drawing).
func checkHistories(ctx context.Context, sp *spec.Spec, hc *spec.HistoryCheck, trialDir string) (o Outcome, failed bool, err error) {
	model, err := history.NewModel(hc.Model)
	if err != nil {
		return Outcome{}, false, err
	}
	var clients []history.Client
	for _, n := range sp.Nodes {
		path := filepath.Join(trialDir, n.Name, hc.History)
		ops, err := history.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				return Outcome{}, false, fmt.Errorf("reading node %s's history: %w", n.Name, err)
			}
			return Outcome{Kind: CheckerFailed, Node: n.Name, Detail: "malformed history: " + relTo(trialDir, err.Error())}, true, nil
		}
		for i := range ops {
			ops[i].Source = relTo(trialDir, ops[i].Source)
		}
		clients = append(clients, history.Client{Name: n.Name, Ops: ops})
	}
	if len(clients) == 0 {
		return Outcome{Kind: CheckerFailed, Detail: fmt.Sprintf("no node wrote a history (%s in its {{tmp}})", hc.History)}, true, nil
	}
	ops, procs := history.Merge(clients)
	res, err := history.Check(ctx, model, ops, sp.Checker.Timeout)
	if err != nil {
		if ctx.Err() != nil {
			return Outcome{}, false, err
		}
		// A model's complaint about an operation (file:line: ...).
		return Outcome{Kind: CheckerFailed, Detail: "malformed history: " + err.Error()}, true, nil
	}
	what := fmt.Sprintf("history of %d ops (%d processes of %d clients, %d of unknown outcome)", len(ops), len(procs), len(clients), res.Unknown)
	switch res.Verdict {
	case history.Linearizable:
		return Outcome{Kind: Pass}, false, nil
	case history.TimedOut:
		path := filepath.Join(trialDir, HistoryVisualization)
		if err := res.VisualizeFile(path); err != nil {
			return Outcome{}, false, fmt.Errorf("drawing the history: %w", err)
		}
		return Outcome{Kind: Pass, Detail: fmt.Sprintf("linearizability check of the %s timed out after %v; see %s", what, sp.Checker.Timeout, path)}, false, nil
	}
	path := filepath.Join(trialDir, HistoryVisualization)
	if err := res.VisualizeFile(path); err != nil {
		return Outcome{}, false, fmt.Errorf("drawing the history: %w", err)
	}
	return Outcome{Kind: NotLinearizable, Detail: fmt.Sprintf("%s is not linearizable under model %s; see %s", what, hc.Model, path)}, true, nil
}

// checkTrialHistory checks a passing trial's histories and folds the
// verdict into res.Outcome, keeping its Steps and VTime: the one call the
// trial loop and native runs make after their command checker.
func checkTrialHistory(ctx context.Context, sp *spec.Spec, hc *spec.HistoryCheck, res *TrialResult, log *slog.Logger) error {
	if hc == nil || res.Outcome.Kind != Pass {
		return nil
	}
	o, failed, err := checkHistories(ctx, sp, hc, res.Dir)
	if err != nil {
		return fmt.Errorf("checking trial %d's histories: %w", res.Index, err)
	}
	if failed {
		res.Outcome.Kind, res.Outcome.Node, res.Outcome.Detail = o.Kind, o.Node, o.Detail
	} else if o.Detail != "" {
		// A timed-out check: the trial passes, and says why it is unsure.
		res.Outcome.Detail = o.Detail
		log.Warn("linearizability check timed out", "trial", res.Index, "detail", o.Detail)
	}
	return nil
}

// relTo shortens the trial directory out of s: a history's source reads
// node/history.jsonl:12.
func relTo(dir, s string) string {
	return strings.ReplaceAll(s, dir+string(filepath.Separator), "")
}
