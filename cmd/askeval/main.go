// Command askeval runs an evaluation set against the Ask assistant on
// the demo workspace (ask/askeval.Demo: the reference server's, on its
// built-in rows) with the model a provider flag names, and prints the
// report as Markdown; -json writes it as JSON too, for -compare on a
// later run.
//
// Run it from the module root:
//
//	go run ./cmd/askeval -provider mock                      # the golden set (ask/askeval/golden)
//	go run ./cmd/askeval -cases ask/askeval/golden -provider mock -json mock.json
//	go run ./cmd/askeval -provider openai -model gpt-4o-mini -runs 3 -compare mock.json
//	go run ./cmd/askeval -provider anthropic -model claude-sonnet-4-5 -price-input 3 -price-output 15
//
// The key comes from the environment (OPENAI_API_KEY, ANTHROPIC_API_KEY,
// or the variable -key-env names). -record DIR saves the model's replies
// as transcripts and -replay DIR answers from them instead of a model
// (ask/askeval.Recorder, Replay). A host evaluates its own catalog
// through the package, not this command: see ask/askeval's Example and
// docs/evaluation.md.
//
// It exits 1 when the evaluation could not run, and with
// -fail-on-regression when a case passes less often than in -compare's
// report.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/ask/askeval"
	"github.com/askbi/askbi/ask/provider"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "askeval:", err)
		os.Exit(1)
	}
}

// run runs the command with args, writing the Markdown report to
// stdout unless -markdown names a file.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	flag := flag.NewFlagSet("askeval", flag.ContinueOnError)
	casesDir := flag.String("cases", "", "a directory of case files (.json, .yaml, .yml); default: the golden set built into ask/askeval")
	name := flag.String("provider", "mock", "the model: mock, openai or anthropic")
	model := flag.String("model", "", "the model name (openai, anthropic)")
	baseURL := flag.String("base-url", "", "an OpenAI-compatible or Anthropic API root (default: the provider's own)")
	keyEnv := flag.String("key-env", "", "the environment variable holding the API key (default OPENAI_API_KEY or ANTHROPIC_API_KEY)")
	runs := flag.Int("runs", 1, "runs of each case (models are not deterministic)")
	parallel := flag.Int("parallel", 1, "runs at once")
	sharing := flag.String("sharing", "", "what tool output reaches the model: schema, aggregates or rows (default: the demo's, aggregates)")
	only := flag.String("case", "", "run only the cases whose ID matches this regular expression")
	jsonOut := flag.String("json", "", "also write the report as JSON to this file")
	mdOut := flag.String("markdown", "", "write the Markdown report to this file instead of standard output")
	compare := flag.String("compare", "", "an earlier run's JSON report to compare with")
	failRegressed := flag.Bool("fail-on-regression", false, "exit 1 when a case passes less often than in -compare's report")
	judgeName := flag.String("judge-provider", "", "a provider to ask as an LLM judge after the checks (default: none)")
	judgeModel := flag.String("judge-model", "", "the judge's model name")
	record := flag.String("record", "", "save the model's replies as transcripts in this directory")
	replay := flag.String("replay", "", "answer from the transcripts in this directory instead of a model")
	var prices askeval.Prices
	flag.Float64Var(&prices.Input, "price-input", 0, "US dollars per million input tokens, for the cost")
	flag.Float64Var(&prices.Output, "price-output", 0, "US dollars per million output tokens")
	flag.Float64Var(&prices.CachedInput, "price-cached", 0, "US dollars per million input tokens read from the prompt cache (default: -price-input)")
	flag.Float64Var(&prices.CacheWrite, "price-cache-write", 0, "US dollars per million input tokens written to the prompt cache (default: -price-input)")
	if err := flag.Parse(args); err != nil {
		return err
	}

	var cases []askeval.Case
	var err error
	if *casesDir == "" {
		cases, err = askeval.LoadCases(askeval.Golden, "golden")
	} else {
		cases, err = askeval.LoadCases(os.DirFS(*casesDir), ".")
	}
	if err != nil {
		return errorText(err)
	}
	if *only != "" {
		re, err := regexp.Compile(*only)
		if err != nil {
			return fmt.Errorf("-case: %v", err)
		}
		var kept []askeval.Case
		for _, c := range cases {
			if re.MatchString(c.ID) {
				kept = append(kept, c)
			}
		}
		if cases = kept; len(cases) == 0 {
			return fmt.Errorf("-case %q matches no case", *only)
		}
	}

	cfg := provider.Config{Name: *name, Model: *model, BaseURL: *baseURL, APIKeyEnv: *keyEnv}
	label := cfg.String()
	var p ask.Provider
	if *replay != "" {
		ts, err := askeval.LoadTranscripts(os.DirFS(*replay), ".")
		if err != nil {
			return err
		}
		p, label = askeval.NewReplay(ts), "replay of "+*replay
	} else if p, err = provider.New(cfg); err != nil {
		return fmt.Errorf("-provider %s: %s", *name, askbi.ErrorMessage(err))
	}
	var rec *askeval.Recorder
	if *record != "" {
		rec = askeval.NewRecorder(p, label)
		p = rec
	}
	opts := &askeval.Options{Runs: *runs, Parallel: *parallel, Provider: label}
	if prices.Input > 0 || prices.Output > 0 {
		opts.Prices = &prices
	}
	if *judgeName != "" {
		jp, err := provider.New(provider.Config{Name: *judgeName, Model: *judgeModel})
		if err != nil {
			return fmt.Errorf("-judge-provider %s: %s", *judgeName, askbi.ErrorMessage(err))
		}
		opts.Judge = askeval.ModelJudge(jp)
	}
	open := askeval.Demo
	if *sharing != "" {
		level := ask.Sharing(*sharing)
		if level != ask.SharingSchema && level != ask.SharingAggregates && level != ask.SharingRows {
			return fmt.Errorf("-sharing %q: must be schema, aggregates or rows", *sharing)
		}
		open = func(ctx context.Context) (*askeval.Workspace, error) {
			ws, err := askeval.Demo(ctx)
			if err == nil {
				ws.Options.Sharing = ask.StaticSharing(level)
			}
			return ws, err
		}
	}

	report, err := askeval.New(p, open, opts).Run(ctx, cases)
	if err != nil {
		return errorText(err)
	}
	if rec != nil {
		if err := askeval.WriteTranscripts(*record, rec.Transcripts()); err != nil {
			return err
		}
	}
	if *compare != "" {
		f, err := os.Open(*compare)
		if err != nil {
			return err
		}
		prev, err := askeval.ReadReport(f)
		f.Close()
		if err != nil {
			return err
		}
		report.CompareWith(prev, *compare)
	}
	if *jsonOut != "" {
		if err := writeFile(*jsonOut, report.JSON); err != nil {
			return err
		}
	}
	if *mdOut != "" {
		err = writeFile(*mdOut, report.Markdown)
	} else {
		err = report.Markdown(stdout)
	}
	if err != nil {
		return err
	}
	if c := report.Compared; *failRegressed && c != nil && len(c.Regressions) > 0 {
		return fmt.Errorf("%d of %d cases regressed against %s", len(c.Regressions), len(report.Cases), *compare)
	}
	return nil
}

// writeFile writes name with write.
func writeFile(name string, write func(io.Writer) error) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// errorText is err in a line: its code and safe message for an askbi
// error, the error itself otherwise.
func errorText(err error) error {
	var e *askbi.Error
	if errors.As(err, &e) {
		return fmt.Errorf("%s: %s", askbi.ErrorCode(err), askbi.ErrorMessage(err))
	}
	return err
}
