// Package askeval is the evaluation harness of the Ask assistant: how
// often it answers right, for any model, on the demo workspace in CI and
// on a host's own catalog and questions.
//
// A [Case] is a question (with what was selected and earlier turns) and
// the checks a right answer passes, written without code in a JSON or
// YAML file (docs/evaluation.md): the datasets or charts it reads, its
// filters and breakdown, the numbers it states, the tools that must or
// must not run, whether an approval is asked. A [Runner] asks the real
// [ask.Assistant] each question, on a fresh [Workspace] each time, with
// any [ask.Provider] (the mock, an OpenAI-compatible server, Anthropic),
// answers approvals as the case says, runs each case several times, and
// scores every run on the rows the tools really returned, compared with
// a gold dataset run or query, with a [Reason] for each failure
// (Databricks Genie's: empty result, missing rows, extra rows, wrong
// number, wrong dataset, needless approval, refused, error; and one per
// other check). An LLM [Judge] is optional and never the only check.
// The [Report] gives the pass rate by category and case, tokens and
// cost, latency p50 and p95, as Markdown and JSON, and what changed
// since an earlier report ([Report.CompareWith]).
//
// Nothing leaves the process that the sharing level keeps from the
// model: the judge sees the tool output as the model saw it, and a
// report names rows only under [ask.SharingRows].
//
// [Golden] is the set for the demo workspace ([Demo]); command
// cmd/askeval runs it or a host's own files. [Replay] and [Recorder]
// replay and record a model's replies, so scoring is tested offline.
//
// # Quick start
//
//	cases, err := askeval.LoadCases(os.DirFS("evals"), ".")
//	runner := askeval.New(model, func(ctx context.Context) (*askeval.Workspace, error) {
//		return &askeval.Workspace{Catalog: catalog, Executor: exec, Gate: gate,
//			Principals: map[string]access.Principal{"analyst": analyst}, Default: "analyst"}, nil
//	}, &askeval.Options{Runs: 3})
//	report, err := runner.Run(ctx, cases)
//	report.Markdown(os.Stdout)
package askeval

import "embed"

// Golden is the golden set of the demo workspace ([Demo]): questions a
// newcomer asks, one file per category, in directory "golden".
//
//	cases, err := askeval.LoadCases(askeval.Golden, "golden")
//
//go:embed golden/*.yaml
var Golden embed.FS
