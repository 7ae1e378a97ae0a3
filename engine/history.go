package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/lockstep-dev/lockstep/history"
	"github.com/lockstep-dev/lockstep/internal/safefs"
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
// written to trialDir/history.html (see trialFiles) and its path is in the
// Detail. err is lockstep's own failure (reading the files, writing the
// drawing). The files are read and written through tf, through no link.
func checkHistories(ctx context.Context, sp *spec.Spec, hc *spec.HistoryCheck, tf *trialFiles) (o Outcome, failed bool, err error) {
	model, err := history.NewModel(hc.Model)
	if err != nil {
		return Outcome{}, false, err
	}
	trialDir := tf.dir.Path()
	var clients []history.Client
	for _, n := range sp.Nodes {
		rel := filepath.Join(n.Name, hc.History)
		ops, err := readHistory(tf, rel)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if pe := (*plantedError)(nil); errors.As(err, &pe) {
			return Outcome{Kind: CheckerFailed, Node: n.Name, Detail: relTo(trialDir, err.Error())}, true, nil
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
		path, err := drawHistory(tf, res)
		if err != nil {
			return Outcome{}, false, err
		}
		return Outcome{Kind: Pass, Detail: fmt.Sprintf("linearizability check of the %s timed out after %v; see %s", what, sp.Checker.Timeout, path)}, false, nil
	}
	path, err := drawHistory(tf, res)
	if err != nil {
		return Outcome{}, false, err
	}
	return Outcome{Kind: NotLinearizable, Detail: fmt.Sprintf("%s is not linearizable under model %s; see %s", what, hc.Model, path)}, true, nil
}

// plantedError: a node's file in the trial's directory is something
// lockstep does not read through (a link, a FIFO, a directory).
type plantedError struct{ path, what string }

func (e *plantedError) Error() string {
	return fmt.Sprintf("history %s is %s, which lockstep does not read", e.path, e.what)
}

// readHistory reads the history at rel below the trial's directory. What a
// node left there that is not a regular file, or that is reached through
// a link, is a plantedError: a client's bug, not lockstep's, and a link to a
// host file must not put the file's lines in an outcome.
func readHistory(tf *trialFiles, rel string) ([]history.Op, error) {
	f, err := tf.open(rel)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		if what := tf.dir.Kind(rel); what != "" && what != "a regular file" || errors.Is(err, safefs.ErrNotRegular) ||
			errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ENOTDIR) {
			if what == "" {
				what = "reached through a link"
			}
			return nil, &plantedError{path: tf.dir.Join(rel), what: what}
		}
		return nil, err
	}
	defer f.Close()
	return history.Read(f, f.Name())
}

// drawHistory writes porcupine's drawing of the check to history.html and
// returns where it went.
func drawHistory(tf *trialFiles, res *history.Result) (string, error) {
	f, err := tf.create(HistoryVisualization)
	if err != nil {
		return "", fmt.Errorf("drawing the history: %w", err)
	}
	err = res.Visualize(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("drawing the history in %s: %w", f.Name(), err)
	}
	return f.Name(), nil
}

// checkTrialHistory checks a passing trial's histories and folds the
// verdict into res.Outcome, keeping its Steps and VTime: the one call the
// trial loop and native runs make after their command checker.
func checkTrialHistory(ctx context.Context, sp *spec.Spec, hc *spec.HistoryCheck, res *TrialResult, tf *trialFiles, log *slog.Logger) error {
	if hc == nil || res.Outcome.Kind != Pass {
		return nil
	}
	o, failed, err := checkHistories(ctx, sp, hc, tf)
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
