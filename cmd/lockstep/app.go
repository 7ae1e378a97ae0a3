package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/conflict"
	"github.com/lockstep-dev/lockstep/coverage"
	"github.com/lockstep-dev/lockstep/engine"
	"github.com/lockstep-dev/lockstep/image"
	"github.com/lockstep-dev/lockstep/netns"
	"github.com/lockstep-dev/lockstep/report"
	"github.com/lockstep-dev/lockstep/spec"
	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"
)

// version is set by the linker for releases.
var version = engine.Version

// exitError carries an exit status: 1 a bug was found, 2 bad input or a
// lockstep error.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}
func (e *exitError) ExitCode() int { return e.code }
func (e *exitError) Unwrap() error { return e.err }

func badInput(err error) error { return &exitError{code: 2, err: err} }

// loadSpec loads the spec at path with its images unpacked (spec.Load
// only names them), so that a spec whose images are missing or cannot
// start is bad input like any other.
func loadSpec(ctx context.Context, path string) (*spec.Spec, error) {
	sp, err := spec.Load(path)
	if err != nil {
		return nil, err
	}
	if err := image.Resolve(ctx, sp); err != nil {
		return nil, err
	}
	return sp, nil
}

// runApp runs the app on args with each command's flags allowed after its
// arguments too (`lockstep run SPEC --trials 5`).
func runApp(ctx context.Context, app *cli.App, args []string) error {
	return app.RunContext(ctx, interspersed(app, args))
}

// interspersed moves a command's flags that follow its positional
// arguments in front of them: urfave/cli v2 stops reading flags at the
// first positional argument. A flag's value goes with it; everything after
// "--" stays positional; a last flag that lacks its value stays last. A
// global flag (--log-level, -v) given among the command's moves in front
// of the command, where urfave/cli reads it.
func interspersed(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	globalTakes := takesValue(app.Flags)
	// Global flags (--help, --version, --log-level LEVEL) come before the
	// command's name.
	i := 1
	for i < len(args) && strings.HasPrefix(args[i], "-") {
		name, _, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		if !hasValue && globalTakes[name] {
			i++
		}
		i++
	}
	if i >= len(args) {
		return args
	}
	cmd := app.Command(args[i])
	if cmd == nil {
		return args
	}
	takes := takesValue(cmd.Flags)
	global := append([]string(nil), args[1:i]...)
	out := []string{args[i]}
	var pos []string
	rest := args[i+1:]
	for k := 0; k < len(rest); k++ {
		a := rest[k]
		switch {
		case a == "--":
			pos = append(pos, rest[k:]...)
			k = len(rest)
		case len(a) > 1 && a[0] == '-':
			name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
			_, own := takes[name]
			_, isGlobal := globalTakes[name]
			to := &out
			if !own && isGlobal {
				to = &global
			}
			*to = append(*to, a)
			needs := !hasValue && (takes[name] || !own && globalTakes[name])
			if needs && k+1 == len(rest) {
				// A last flag without its value: moved in front of the
				// arguments it would take "--" or SPEC for its value
				// (--json would write a file named "--"). Left last, with
				// nothing after it, urfave/cli says it needs an argument.
				if to == &global {
					out = nil
				}
				return append(append([]string{args[0]}, global...), out...)
			}
			if needs {
				k++
				*to = append(*to, rest[k])
			}
		default:
			pos = append(pos, a)
		}
	}
	if len(pos) > 0 && pos[0] != "--" {
		// Keep later arguments that look like flags positional.
		out = append(out, "--")
	}
	return append(append(append([]string{args[0]}, global...), out...), pos...)
}

// takesValue says, for each name of flags, whether the flag takes a value.
func takesValue(flags []cli.Flag) map[string]bool {
	m := map[string]bool{}
	for _, f := range flags {
		tv, ok := f.(interface{ TakesValue() bool })
		for _, name := range f.Names() {
			m[name] = ok && tv.TakesValue()
		}
	}
	return m
}

func newApp() *cli.App {
	return &cli.App{
		Name:            "lockstep",
		Usage:           "find and replay concurrency bugs in unmodified distributed systems",
		Version:         version,
		HideHelpCommand: true,
		Writer:          os.Stdout,
		ErrWriter:       os.Stderr,
		ExitErrHandler:  func(*cli.Context, error) {},
		// -v is --verbose; the version is --version or the version command.
		HideVersion: true,
		Flags:       []cli.Flag{logLevelFlag, verboseFlag, &cli.BoolFlag{Name: "version", Usage: "print the version"}},
		Before:      checkLogFlags,
		Action: func(c *cli.Context) error {
			if c.Bool("version") {
				fmt.Fprintln(c.App.Writer, "lockstep version", version)
				return nil
			}
			return cli.ShowAppHelp(c)
		},
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return badInput(err)
		},
		Commands: []*cli.Command{runCmd(), mergeCmd(), replayCmd(), showCmd(), kindsCmd(), explainCmd(), importCmd(), benchCmd(), k8sCmd(), cleanCmd(), doctorCmd(), versionCmd()},
	}
}

func versionCmd() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print the version",
		Action: func(c *cli.Context) error {
			fmt.Fprintln(c.App.Writer, "lockstep", version)
			return nil
		},
	}
}

func runCmd() *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "run a spec for N trials and report the failures found",
		ArgsUsage: "SPEC",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "trials", Aliases: []string{"n"}, Usage: "number of trials (default: the spec's)"},
			&cli.StringFlag{Name: "strategy", Aliases: []string{"s"}, Usage: "random, pct, pos, pos* or explore, each with an optional + (default: the spec's)"},
			&cli.StringFlag{Name: "scheme", Usage: "conflict signature scheme of + strategies, e.g. proc+pc+kind (default: the spec's scheduler.conflict.scheme)"},
			&cli.Float64Flag{Name: "conflict-weight", Usage: "POS-family + strategies: give possibly-conflicting ops priority 1-U^(1/`N`) instead of releasing the others at once (scheduler.conflict mode weight with this weight; default: the spec's mode)"},
			&cli.Int64Flag{Name: "seed", Usage: "campaign seed (default: the spec's)"},
			&cli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Value: 1, Usage: "trials run in parallel, each in its own network"},
			&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Usage: "output directory (default: lockstep-out/NAME, replaced by each run); one holding a previous run is refused"},
			&cli.BoolFlag{Name: "replace", Usage: "remove the previous run's trials from --out first"},
			&cli.BoolFlag{Name: "stop-on-first", Usage: "stop at the first failing trial (with --symptom: the first that reproduces it)"},
			&cli.BoolFlag{Name: "trace-all", Usage: "write a trace for every trial, not only failing ones"},
			&cli.BoolFlag{Name: "keep-tmp", Usage: "keep the nodes' {{tmp}} directories of passing trials too, not only failing ones'"},
			&cli.BoolFlag{Name: "drop-tmp", Usage: "keep no trial's {{tmp}} directories, failing ones' neither (their traces and the nodes' output stay): for long campaigns of systems that write much there"},
			&cli.StringFlag{Name: "history", Usage: "conflict history file for + strategies (read and updated)"},
			&cli.BoolFlag{Name: "stats", Usage: "print conflict-prediction accuracy (+ strategies)"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress bar"},
			&cli.BoolFlag{Name: "native", Usage: "run without lockstep (same network, real time, no tracer): the baseline hit ratio"},
			&cli.DurationFlag{Name: "native-limit", Usage: "with --native: clients still running after this are a hang (default: the spec's limits.real_time)"},
			&cli.StringFlag{Name: "junit", Usage: "also write the result as JUnit XML to `FILE` (a test case per campaign)"},
			&cli.StringFlag{Name: "json", Usage: "also write the summary as JSON to `FILE`"},
			&cli.StringFlag{Name: "html", Usage: "also write the campaign's report (totals, the coverage curve, failures) to `FILE` (self-contained HTML)"},
			shardFlag, shardEnvFlag,
			&cli.DurationFlag{Name: "explain", Usage: "explain the first failure (lockstep explain), within this real-time `BUDGET`, under the summary"},
			&cli.StringFlag{Name: "symptom", Usage: "aim at the production log excerpt in `FILE` (the lines several nodes wrote, in order, and optionally a \"failure: ...\" line): a trial whose node prints its last line fails, and explore steers to trials that print more of it in order"},
			&cli.BoolFlag{Name: "verify", Value: true, Usage: "replay each failing trial's trace right after it; a failure whose replay diverges is reported as unreplayable, a lockstep problem (--verify=false for speed)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return badInput(errors.New("run: want exactly one SPEC argument"))
			}
			sp, err := loadSpec(c.Context, c.Args().First())
			if err != nil {
				// CI still gets a report saying why nothing ran.
				return withCIReports(c, badInput(err), report.Campaign{Spec: c.Args().First(), Err: err})
			}
			if n := c.Int("trials"); n < 0 || n > spec.MaxTrials || c.Int("jobs") < 1 {
				return badInput(fmt.Errorf("run: --trials must be between 0 and %d and --jobs at least 1", spec.MaxTrials))
			}
			if err := conflictFlags(c, sp); err != nil {
				return badInput(err)
			}
			if c.Bool("keep-tmp") && c.Bool("drop-tmp") {
				return badInput(errors.New("run: --keep-tmp and --drop-tmp ask for opposite things"))
			}
			out, err := absPath(c.String("out"))
			if err != nil {
				return badInput(err)
			}
			opts := engine.RunOptions{
				Trials: c.Int("trials"), Strategy: c.String("strategy"), Jobs: c.Int("jobs"),
				OutDir: out, Replace: c.Bool("replace"), StopOnFirst: c.Bool("stop-on-first"), TraceAll: c.Bool("trace-all"), KeepTmp: c.Bool("keep-tmp"), DropTmp: c.Bool("drop-tmp"),
				History: c.String("history"), Native: c.Bool("native"), NativeLimit: c.Duration("native-limit"),
				Logger: logger(c, c.App.ErrWriter), Verify: c.Bool("verify"), DropRecords: true,
			}
			if p := c.String("symptom"); p != "" {
				sy, err := readSymptom(p)
				if err != nil {
					return badInput(err)
				}
				opts.Symptom = sy
			}
			if c.IsSet("seed") {
				s := c.Int64("seed")
				opts.Seed = &s
			}
			total := sp.Trials
			if opts.Trials > 0 {
				total = opts.Trials
			}
			if c.IsSet("shard") {
				if err := shardRun(c, sp, &opts); err != nil {
					return err
				}
				total = opts.Shard.Size(total)
			}
			bar := newBar(c.App.ErrWriter, total, c.Bool("quiet"))
			failures, done := 0, 0
			start := time.Now()
			opts.Progress = func(r *engine.TrialResult) {
				done++
				if r.Outcome.Kind.IsFailure() {
					failures++
				}
				if bar != nil {
					bar.Describe(progressLine(failures, done, time.Since(start), r))
					bar.Add(1)
				}
			}
			sum, err := engine.Run(c.Context, sp, opts)
			if bar != nil {
				bar.Finish()
				fmt.Fprintln(c.App.ErrWriter)
			}
			if err != nil {
				if sig := interruption(c.Context); sig != nil {
					return sig
				}
				return withCIReports(c, &exitError{code: 2, err: err}, report.Campaign{Spec: sp.Name, Summary: sum, Err: err})
			}
			if opts.Shard.Count > 0 {
				return shardDone(c, sum, opts.OutDir, start)
			}
			report.WriteSummary(c.App.Writer, sum, c.Bool("stats"))
			if b := c.Duration("explain"); b > 0 && sum.First != nil && sum.First.TracePath != "" {
				explainFirst(c, sum.First.TracePath, b)
			}
			if err := writeCIReports(c, report.Campaign{Spec: sp.Name, Summary: sum}); err != nil {
				return err
			}
			return runStatus(c.Context, sum)
		},
	}
}

// conflictFlags lays run's --scheme and --conflict-weight over the spec's
// scheduler.conflict, checked as the spec's own fields are, so that a
// flag cannot give a campaign a value its spec could not.
func conflictFlags(c *cli.Context, sp *spec.Spec) error {
	if c.IsSet("scheme") {
		if _, err := conflict.ParseScheme(c.String("scheme")); err != nil {
			return fmt.Errorf("run: --scheme: %w", err)
		}
		sp.Scheduler.Conflict.Scheme = c.String("scheme")
	}
	if c.IsSet("conflict-weight") {
		w := c.Float64("conflict-weight")
		if err := spec.CheckConflictWeight(w); err != nil {
			return fmt.Errorf("run: --conflict-weight: %w", err)
		}
		sp.Scheduler.Conflict.Mode = "weight"
		sp.Scheduler.Conflict.Weight = w
	}
	return nil
}

// runStatus is run's exit status: 1 when a failure was found, even if
// interrupted (the traces are the news); else 128+N when stopped by
// signal N; else 2 when a trial ended in a lockstep error.
func runStatus(ctx context.Context, sum *engine.Summary) error {
	switch {
	case sum.Failures > 0:
		return &exitError{code: 1}
	case sum.RequiredUnreached() && !sum.Interrupted:
		return &exitError{code: 1, err: fmt.Errorf("no trial reached a required sometimes property")}
	case sum.Interrupted:
		return interruptedStatus(ctx)
	case sum.Unreplayable > 0:
		return &exitError{code: 2, err: fmt.Errorf("%d trial(s) failed but their traces did not replay, %d ended in a lockstep error", sum.Unreplayable, sum.Errors-sum.Unreplayable)}
	case sum.Errors > 0:
		return &exitError{code: 2, err: fmt.Errorf("%d trial(s) ended in a lockstep error", sum.Errors)}
	}
	return nil
}

// interruption is the signal that cancelled ctx, if one did.
func interruption(ctx context.Context) error {
	var in interrupted
	if errors.As(context.Cause(ctx), &in) {
		return in
	}
	return nil
}

// interruptedStatus is the exit status of a command stopped before its end:
// 128+N when signal N stopped it, else 130.
func interruptedStatus(ctx context.Context) error {
	if sig := interruption(ctx); sig != nil {
		return sig
	}
	return &exitError{code: 130, err: errors.New("interrupted")}
}

// traceFailed is the exit status of a command that could not work on its
// trace: the signal's when one stopped it, else the input's fault.
func traceFailed(ctx context.Context, err error) error {
	if sig := interruption(ctx); sig != nil {
		return sig
	}
	return badInput(err)
}

// traceArgs reads the one TRACE argument (a trace, or the trial directory
// that holds it) and --out of a command that works on a trace, both made
// absolute.
func traceArgs(c *cli.Context) (trace, out string, err error) {
	if c.NArg() != 1 {
		return "", "", badInput(fmt.Errorf("%s: want exactly one TRACE argument", c.Command.Name))
	}
	if trace, err = traceFile(c.Args().First()); err != nil {
		return "", "", badInput(err)
	}
	if trace, err = absPath(trace); err != nil {
		return "", "", badInput(err)
	}
	if out, err = absPath(c.String("out")); err != nil {
		return "", "", badInput(err)
	}
	return trace, out, nil
}

// traceFile takes a trial's directory for the trace it holds. A
// directory without one is named for what it is.
func traceFile(p string) (string, error) {
	st, err := os.Stat(p)
	if err != nil || !st.IsDir() {
		return p, nil // the trace's reader says what is wrong
	}
	trace := filepath.Join(p, "trace.jsonl")
	if _, err := os.Stat(trace); err == nil {
		return trace, nil
	}
	if _, err := os.Stat(filepath.Join(p, "trials")); err == nil {
		return "", fmt.Errorf("%s is a campaign's output directory: name one of its trials (%s/trials/NNNNN) or a trace", p, filepath.Clean(p))
	}
	return "", fmt.Errorf("%s holds no trace.jsonl: name a trace, or the directory of a trial that wrote one", p)
}

// absPath makes a path from the command line absolute: nodes run in their
// own directories, where a relative {{tmp}} would point nowhere.
func absPath(p string) (string, error) {
	if p == "" {
		return "", nil
	}
	a, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	return a, nil
}

func newBar(w io.Writer, total int, quiet bool) *progressbar.ProgressBar {
	f, ok := w.(*os.File)
	if quiet || !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return progressbar.NewOptions(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetWidth(30),
		progressbar.OptionShowCount(),
		progressbar.OptionSetDescription("trials"),
		progressbar.OptionClearOnFinish(),
	)
}

// writeCIReports writes the --junit, --json and --html files run was asked for. A
// report that cannot be written is a lockstep error: CI would otherwise
// read a stale file or none.
func writeCIReports(c *cli.Context, camp report.Campaign) error {
	for _, out := range []struct {
		flag  string
		write func(io.Writer, report.Campaign) error
	}{
		{"junit", func(w io.Writer, camp report.Campaign) error { return report.WriteJUnit(w, []report.Campaign{camp}) }},
		{"json", report.WriteJSON},
		{"html", report.WriteCampaignHTML},
	} {
		p := c.String(out.flag)
		if p == "" {
			continue
		}
		if err := writeFile(p, func(w io.Writer) error { return out.write(w, camp) }); err != nil {
			return &exitError{code: 2, err: fmt.Errorf("--%s: %w", out.flag, err)}
		}
	}
	return nil
}

// withCIReports writes the CI reports of a run that failed with err and
// returns err, and the reports' own error if they could not be written.
func withCIReports(c *cli.Context, err error, camp report.Campaign) error {
	if werr := writeCIReports(c, camp); werr != nil {
		return errors.Join(err, werr)
	}
	return err
}

// writeFile creates p and writes it with write, reporting a failed close
// (a full disk shows up there).
func writeFile(p string, write func(io.Writer) error) error {
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func replayCmd() *cli.Command {
	return &cli.Command{
		Name:      "replay",
		Usage:     "re-run the trial a trace describes and check it fails the same way",
		ArgsUsage: "TRACE (a trace.jsonl, or the trial directory that holds it)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Usage: "output directory (default: beside the trace)"},
			&cli.BoolFlag{Name: "lines", Usage: "first print the nodes' lines as \"NODE | LINE\", in the order lockstep read them (after each step): the cluster's log in one, as a --symptom file takes it"},
		},
		Action: func(c *cli.Context) error {
			trace, out, err := traceArgs(c)
			if err != nil {
				return err
			}
			rr, err := engine.ReplayWith(c.Context, trace, out, engine.ReplayOptions{Log: logger(c, c.App.ErrWriter), Lines: c.Bool("lines")})
			if err != nil {
				return traceFailed(c.Context, err)
			}
			for _, l := range rr.Trial.Lines {
				fmt.Fprintf(c.App.Writer, "%s | %s\n", l.Node, l.Text)
			}
			fmt.Fprintf(c.App.Writer, "replayed %d ops: %v\n", len(rr.Trial.Records), rr.Trial.Outcome)
			if !rr.Same {
				return &exitError{code: 2, err: fmt.Errorf("replay differs from the trace: %s", rr.Diff)}
			}
			fmt.Fprintln(c.App.Writer, "same outcome and same op sequence as the trace")
			if rr.Moved > 0 {
				fmt.Fprintf(c.App.Writer, "(%d ops ran on another thread of the same process, as Go and JVM runtimes do)\n", rr.Moved)
			}
			if rr.Resited > 0 {
				fmt.Fprintf(c.App.Writer, "(%d ops made by the same thread from another call site, as a runtime may send or poll down two paths)\n", rr.Resited)
			}
			if rr.Resized > 0 {
				fmt.Fprintf(c.App.Writer, "(ops with another byte count than the trace's, between Erlang VMs: %d, the first at %s; the same message encoded at another length, as the VM's atom cache may make it)\n", rr.Resized, rr.Sizes)
			}
			if rr.Short > 0 {
				fmt.Fprintf(c.App.Writer, "(%d ops at the trace's end not made: the clients were done, and the processes that made them ended first)\n", rr.Short)
			}
			if rr.Tail > 0 {
				fmt.Fprintf(c.App.Writer, "(%d ops after the trace's last one, before its outcome: processes on their way out)\n", rr.Tail)
			}
			if rr.Clock != "" {
				fmt.Fprintf(c.App.Writer, "(at other virtual times from there: %s)\n", rr.Clock)
			}
			if rr.Trial.Outcome.Kind.IsFailure() {
				return &exitError{code: 1}
			}
			return nil
		},
	}
}

func showCmd() *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "print a trace's interleaving, one line per released op, or draw it (--html)",
		ArgsUsage: "TRACE (a trace.jsonl, or the trial directory that holds it)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "html", Usage: "write a space-time diagram of the trace to `FILE` (self-contained HTML)"},
			&cli.BoolFlag{Name: "slice", Usage: "only the ops in the failure's causal past (with --html: the others greyed out)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return badInput(errors.New("show: want exactly one TRACE argument"))
			}
			path, err := traceFile(c.Args().First())
			if err != nil {
				return badInput(err)
			}
			tr, err := engine.LoadTrace(path)
			if err != nil {
				return badInput(err)
			}
			if c.Bool("slice") {
				return showSlice(c, tr)
			}
			if p := c.String("html"); p != "" {
				if err := writeFile(p, func(w io.Writer) error { return report.WriteHTML(w, tr) }); err != nil {
					return &exitError{code: 2, err: fmt.Errorf("--html: %w", err)}
				}
				fmt.Fprintf(c.App.Writer, "wrote %s (%d ops)\n", p, len(tr.Records))
				return nil
			}
			report.WriteTrace(c.App.Writer, tr)
			return nil
		},
	}
}

func cleanCmd() *cli.Command {
	return &cli.Command{
		Name:  "clean",
		Usage: "remove namespaces, links, cgroups, run directories and {{tmp}} mounts left by killed lockstep runs",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "all", Usage: "also remove the objects of lockstep runs that are still alive"},
		},
		Action: func(c *cli.Context) error {
			los, err := netns.Sweep(c.Context, c.Bool("all"))
			removed := 0
			// The nodes' {{tmp}} mounts of killed runs keep their memory.
			tmps, terr := engine.SweepTmp(c.Bool("all"))
			for _, at := range tmps {
				removed++
				fmt.Fprintf(c.App.Writer, "unmounted {{tmp}} %s\n", at)
			}
			err = errors.Join(err, terr)
			for _, lo := range los {
				if lo.Live && !c.Bool("all") {
					fmt.Fprintf(c.App.Writer, "kept %s (its lockstep is still running)\n", lo.Prefix)
					continue
				}
				removed++
				fmt.Fprintf(c.App.Writer, "removed %s: %s\n", lo.Prefix, strings.Join(lo.Objects, ", "))
			}
			if err != nil {
				return &exitError{code: 1, err: err}
			}
			if removed == 0 {
				fmt.Fprintln(c.App.Writer, "nothing to clean")
			}
			return nil
		},
	}
}

// progressLine is what the progress bar says after a trial: failures,
// the campaign's features (and an exploring campaign's corpus), speed.
func progressLine(failures, done int, took time.Duration, r *engine.TrialResult) string {
	s := fmt.Sprintf("%d failures", failures)
	if r.Features > 0 {
		s += fmt.Sprintf(", %d features", r.Features)
	}
	if r.Corpus > 0 {
		s += fmt.Sprintf(", corpus %d", r.Corpus)
	}
	return s + fmt.Sprintf(", %.1f trials/s", float64(done)/took.Seconds())
}

// readSymptom reads run --symptom's file.
func readSymptom(path string) (*coverage.Symptom, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--symptom: %w", err)
	}
	defer f.Close()
	return coverage.ReadSymptom(f, path)
}
