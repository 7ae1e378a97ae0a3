package report

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/result"
	"github.com/lockstep-dev/lockstep/sched"
	"github.com/lockstep-dev/lockstep/spec"
)

// Campaign is one `lockstep run` as CI sees it: the spec it ran and either
// its summary or the lockstep error that stopped it (Summary may still hold
// the trials finished before).
type Campaign struct {
	Spec    string // the spec's name, or its path when it could not be read
	Summary *result.Summary
	Err     error
}

// JUnit XML, the subset CI servers read (Jenkins, GitLab, GitHub actions'
// test reporters): a suite per invocation, a test case per campaign.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     float64      `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Time     float64     `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Time      float64       `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes the campaigns as JUnit XML: a test case per campaign,
// failing when any trial failed (the message names the first failure's
// outcome and trace; the body lists every failing trace), in error when
// lockstep itself failed (a run error or trials ended in lockstep errors).
func WriteJUnit(w io.Writer, campaigns []Campaign) error {
	suite := junitSuite{Name: "lockstep"}
	for _, c := range campaigns {
		jc := junitCase{Name: c.Spec, ClassName: "lockstep"}
		s := c.Summary
		if s != nil {
			jc.Time = s.Duration.Seconds()
			if s.Strategy != "" {
				jc.Name = fmt.Sprintf("%s (%s)", c.Spec, s.Strategy)
			}
			jc.SystemOut = fmt.Sprintf("%d trials, %d failures (hit ratio %.4f)", s.Trials, s.Failures, s.HitRatio())
			if u := s.Unreached(); len(u) > 0 {
				jc.SystemOut += fmt.Sprintf("; sometimes never reached: %s", sometimesNames(u))
				if s.First == nil && s.RequiredUnreached() {
					jc.Failure = &junitProblem{Type: "sometimes-unreached", Message: fmt.Sprintf("no trial of %d reached: %s", s.Trials, sometimesNames(u))}
				}
			}
			if s.First != nil {
				jc.Failure = &junitProblem{
					Type:    string(s.First.Outcome.Kind),
					Message: fmt.Sprintf("%d of %d trials failed; first: trial %d: %v; trace: %s", s.Failures, s.Trials, s.First.Index, s.First.Outcome, s.First.TracePath),
					Text:    failingTraces(s),
				}
			}
		}
		switch {
		case c.Err != nil:
			jc.Error = &junitProblem{Type: "lockstep-error", Message: c.Err.Error()}
		case s != nil && s.FirstError != nil:
			e := s.FirstError
			msg := fmt.Sprintf("%d trial(s) ended in a lockstep error; first: trial %d", s.Errors, e.Index)
			if e.Outcome.Node != "" {
				msg += ", node " + e.Outcome.Node
			}
			msg += ": " + e.Outcome.Detail
			if e.TracePath != "" {
				msg += "; trace: " + e.TracePath
			}
			jc.Error = &junitProblem{Type: string(sched.Error), Message: msg}
		}
		suite.Tests++
		suite.Time += jc.Time
		if jc.Failure != nil {
			suite.Failures++
		}
		if jc.Error != nil {
			suite.Errors++
		}
		suite.Cases = append(suite.Cases, jc)
	}
	doc := junitSuites{Tests: suite.Tests, Failures: suite.Failures, Errors: suite.Errors, Time: suite.Time, Suites: []junitSuite{suite}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("writing JUnit XML: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("writing JUnit XML: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// sometimesNames lists properties by name, quoted.
func sometimesNames(ps []spec.Property) string {
	var out []string
	for _, p := range ps {
		q := strconv.Quote(p.Name)
		if p.Required {
			q += " (required)"
		}
		out = append(out, q)
	}
	return strings.Join(out, ", ")
}

// failingTraces lists every failing trial with its trace, one a line.
func failingTraces(s *result.Summary) string {
	var out string
	for _, r := range s.Results {
		if r.Outcome.Kind.IsFailure() {
			out += fmt.Sprintf("trial %d %v: %s\n", r.Index, r.Outcome, r.TracePath)
		}
	}
	return out
}

// JSONSummary is `lockstep run --json`: the summary for programs.
type JSONSummary struct {
	Spec     string         `json:"spec"`
	Strategy string         `json:"strategy"`
	Trials   int            `json:"trials"`
	Failures int            `json:"failures"`
	HitRatio float64        `json:"hit_ratio"`
	ByKind   map[string]int `json:"by_kind"`
	Errors   int            `json:"errors"`
	// Unreplayable counts the failing trials whose traces diverged when
	// replayed (run --verify; also in errors), Verified those that
	// replayed the same.
	Unreplayable int          `json:"unreplayable,omitempty"`
	Verified     int          `json:"verified,omitempty"`
	Unreplayed   []*JSONTrial `json:"unreplayable_trials,omitempty"`
	// Sometimes are the spec's sometimes properties, each with the trials
	// that reached it; Unreached names those no trial did.
	Sometimes []JSONSometimes `json:"sometimes,omitempty"`
	Unreached []string        `json:"unreached,omitempty"`
	// Unique lists the spec's unique properties, each with the trials in
	// which a line matched it.
	Unique []JSONUnique `json:"unique,omitempty"`
	// Coverage is the features the trials showed, by class, and the
	// curve of features seen after each trial.
	Coverage    *result.CoverageSummary `json:"coverage,omitempty"`
	Symptom     *result.SymptomSummary  `json:"symptom,omitempty"`
	Interrupted bool                    `json:"interrupted,omitempty"`
	// Duration is the campaign's real time in seconds.
	Duration   float64      `json:"duration_s"`
	First      *JSONTrial   `json:"first_failure,omitempty"`
	FirstError *JSONTrial   `json:"first_error,omitempty"`
	Failing    []*JSONTrial `json:"failing,omitempty"`
	// Error is the lockstep error that stopped the campaign, if one did.
	Error string `json:"error,omitempty"`
}

// JSONUnique is one unique property of a JSONSummary: Trials counts the
// trials in which some line matched it (0: it checked nothing).
type JSONUnique struct {
	Name    string `json:"name"`
	Pattern string `json:"pattern"`
	Trials  int    `json:"trials"`
}

// JSONSometimes is one sometimes property of a JSONSummary.
type JSONSometimes struct {
	Name     string `json:"name"`
	Pattern  string `json:"pattern"`
	Required bool   `json:"required,omitempty"`
	Trials   int    `json:"trials"`
	// Closest is the trial that came closest to it, when none reached it.
	Closest *result.Closest `json:"closest,omitempty"`
}

// JSONTrial is one trial of a JSONSummary.
type JSONTrial struct {
	Index  int    `json:"trial"`
	Kind   string `json:"kind"`
	Detail string `json:"detail,omitempty"`
	Node   string `json:"node,omitempty"`
	Steps  int    `json:"steps"`
	// VTime is the virtual time at the end, in ns.
	VTime int64  `json:"vtime_ns"`
	Trace string `json:"trace,omitempty"`
	Dir   string `json:"dir,omitempty"`
	// Plan is what an exploring campaign ran in the trial; Unique the
	// features a failing one showed that no passing trial did.
	Plan   string   `json:"plan,omitempty"`
	Unique []string `json:"unique_features,omitempty"`
	// TmpNotKept says why its nodes' {{tmp}} directories were not copied
	// to Dir (the disk was short of room).
	TmpNotKept string `json:"tmp_not_kept,omitempty"`
}

func jsonTrial(r *result.TrialResult) *JSONTrial {
	if r == nil {
		return nil
	}
	o := r.Outcome
	return &JSONTrial{Index: r.Index, Kind: string(o.Kind), Detail: o.Detail, Node: o.Node, Steps: o.Steps,
		VTime: int64(o.VTime / time.Nanosecond), Trace: r.TracePath, Dir: r.Dir, Plan: r.Plan, Unique: r.Unique, TmpNotKept: r.TmpNotKept}
}

// NewJSONSummary is a campaign in the form WriteJSON writes.
func NewJSONSummary(c Campaign) *JSONSummary {
	j := &JSONSummary{Spec: c.Spec, ByKind: map[string]int{}}
	if c.Err != nil {
		j.Error = c.Err.Error()
	}
	s := c.Summary
	if s == nil {
		return j
	}
	j.Strategy, j.Trials, j.Failures, j.HitRatio = s.Strategy, s.Trials, s.Failures, s.HitRatio()
	j.Errors, j.Interrupted, j.Duration = s.Errors, s.Interrupted, s.Duration.Seconds()
	j.First, j.FirstError = jsonTrial(s.First), jsonTrial(s.FirstError)
	for k, n := range s.ByKind {
		j.ByKind[string(k)] = n
	}
	j.Unreplayable, j.Verified, j.Coverage, j.Symptom = s.Unreplayable, s.Verified, s.Coverage, s.Symptom
	if s.Spec != nil {
		for _, p := range s.Spec.Properties {
			if p.Kind == spec.Sometimes {
				js := JSONSometimes{Name: p.Name, Pattern: p.Pattern.String(), Required: p.Required, Trials: s.Reached[p.Name]}
				if c, ok := s.Closest[p.Name]; ok && js.Trials == 0 {
					js.Closest = &c
				}
				j.Sometimes = append(j.Sometimes, js)
			}
			if p.Kind == spec.Unique {
				j.Unique = append(j.Unique, JSONUnique{Name: p.Name, Pattern: p.Pattern.String(), Trials: s.Reached[p.Name]})
			}
		}
		for _, p := range s.Unreached() {
			j.Unreached = append(j.Unreached, p.Name)
		}
	}
	for _, r := range s.Results {
		if r.Outcome.Kind.IsFailure() {
			j.Failing = append(j.Failing, jsonTrial(r))
		}
		if r.Outcome.Kind == sched.Unreplayable {
			j.Unreplayed = append(j.Unreplayed, jsonTrial(r))
		}
	}
	return j
}

// WriteJSON writes a campaign's summary as one indented JSON object.
func WriteJSON(w io.Writer, c Campaign) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(NewJSONSummary(c)); err != nil {
		return fmt.Errorf("writing JSON summary: %w", err)
	}
	return nil
}
