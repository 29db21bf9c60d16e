package askeval

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/usage"
)

// RunResult is one run of a case, scored.
type RunResult struct {
	Run    int  `json:"run"`
	Passed bool `json:"passed"`
	// Failures are the checks that failed, none when Passed.
	Failures []Failure `json:"failures,omitempty"`
	// Tools are the scored turn's tool calls, in order, with the state
	// of those that did not complete.
	Tools []string `json:"tools,omitempty"`
	// Answer is the assistant's text in the scored turn: what the model
	// wrote from what it was shown.
	Answer string `json:"answer,omitempty"`
	// Judge is the judge's word, when one was asked.
	Judge string `json:"judge,omitempty"`
	// Usage is the tokens of every turn of the run's conversation.
	Usage ask.Usage `json:"usage"`
	// Cost is Usage in US dollars, when prices are known.
	Cost *float64 `json:"cost_usd,omitempty"`
	// LatencyMS is how long the question took, in milliseconds, its
	// approvals included.
	LatencyMS float64 `json:"latency_ms"`
}

// Tally counts runs.
type Tally struct {
	Cases  int `json:"cases"`
	Runs   int `json:"runs"`
	Passed int `json:"passed"`
	// PassRate is Passed / Runs.
	PassRate float64 `json:"pass_rate"`
}

func (t *Tally) add(passed bool) {
	t.Runs++
	if passed {
		t.Passed++
	}
	t.PassRate = float64(t.Passed) / float64(t.Runs)
}

// CaseResult is a case's runs.
type CaseResult struct {
	ID       string      `json:"id"`
	Category string      `json:"category"`
	Question string      `json:"question"`
	Tally    Tally       `json:"tally"`
	Runs     []RunResult `json:"runs"`
}

// CategoryResult is the runs of a category's cases.
type CategoryResult struct {
	Category string `json:"category"`
	Tally    Tally  `json:"tally"`
}

// Latency is the percentiles of the runs' latencies, in milliseconds.
type Latency struct {
	P50MS float64 `json:"p50_ms"`
	P95MS float64 `json:"p95_ms"`
}

// Prices are a model's prices in US dollars per million tokens, which
// providers do not report: a host states them for the report's cost.
// They are the usage view's own ([usage.Price]), defined once.
type Prices = usage.Price

// Report is a scored evaluation: its pass rate by category and case,
// why runs failed, their cost and latency, and ([Report.CompareWith]) how it
// differs from an earlier one. It marshals as the JSON a later run
// compares with; [Report.Markdown] writes it for people.
type Report struct {
	Provider    string      `json:"provider,omitempty"`
	Sharing     ask.Sharing `json:"sharing,omitempty"`
	RunsPerCase int         `json:"runs_per_case"`
	Started     time.Time   `json:"started"`
	DurationMS  float64     `json:"duration_ms"`
	// Judged says an LLM judge was asked too.
	Judged     bool             `json:"judged,omitempty"`
	Total      Tally            `json:"total"`
	Categories []CategoryResult `json:"categories"`
	Cases      []CaseResult     `json:"cases"`
	// Reasons counts the failed runs by reason.
	Reasons map[Reason]int `json:"reasons"`
	Usage   ask.Usage      `json:"usage"`
	Prices  *Prices        `json:"prices,omitempty"`
	Cost    *float64       `json:"cost_usd,omitempty"`
	Latency Latency        `json:"latency"`
	// Compared is set by [Report.CompareWith].
	Compared *Comparison `json:"compared,omitempty"`
}

// Comparison is how a report differs from an earlier one.
type Comparison struct {
	// Before is the earlier report's pass rate; Regressions are the
	// cases whose pass rate fell, Improvements those whose rose.
	Before       Tally    `json:"before"`
	BeforeLabel  string   `json:"before_label,omitempty"`
	Regressions  []Change `json:"regressions"`
	Improvements []Change `json:"improvements"`
	// Added and Removed are cases in only one of the two.
	Added   []string `json:"added,omitempty"`
	Removed []string `json:"removed,omitempty"`
}

// Change is one case's pass rate before and now.
type Change struct {
	Case   string  `json:"case"`
	Before float64 `json:"before"`
	After  float64 `json:"after"`
	// Reasons are why the case's runs fail now.
	Reasons []Reason `json:"reasons,omitempty"`
}

type reportMeta struct {
	provider string
	runs     int
	sharing  ask.Sharing
	started  time.Time
	took     time.Duration
	prices   *Prices
	judged   bool
}

func newReport(cases []Case, results [][]RunResult, m reportMeta) *Report {
	r := &Report{Provider: m.provider, Sharing: m.sharing, RunsPerCase: m.runs, Started: m.started.UTC(),
		DurationMS: ms(m.took), Judged: m.judged, Reasons: map[Reason]int{}, Prices: m.prices}
	cats := map[string]*Tally{}
	var order []string
	var latencies []float64
	for i, c := range cases {
		cr := CaseResult{ID: c.ID, Category: c.Category, Question: c.Question, Tally: Tally{Cases: 1}}
		if cats[c.Category] == nil {
			cats[c.Category] = &Tally{}
			order = append(order, c.Category)
		}
		cats[c.Category].Cases++
		for _, run := range results[i] {
			if m.prices != nil {
				cost := m.prices.Cost(run.Usage)
				run.Cost = &cost
			}
			cr.Tally.add(run.Passed)
			cats[c.Category].add(run.Passed)
			r.Total.add(run.Passed)
			r.Usage.Add(run.Usage)
			latencies = append(latencies, run.LatencyMS)
			seen := map[Reason]bool{}
			for _, f := range run.Failures {
				if !seen[f.Reason] {
					seen[f.Reason] = true
					r.Reasons[f.Reason]++
				}
			}
			cr.Runs = append(cr.Runs, run)
		}
		r.Cases = append(r.Cases, cr)
	}
	r.Total.Cases = len(cases)
	for _, c := range order {
		r.Categories = append(r.Categories, CategoryResult{Category: c, Tally: *cats[c]})
	}
	if m.prices != nil {
		cost := m.prices.Cost(r.Usage)
		r.Cost = &cost
	}
	r.Latency = Latency{P50MS: percentile(latencies, 50), P95MS: percentile(latencies, 95)}
	return r
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/1e4) / 100 }

// percentile is the nearest-rank percentile p of vs.
func percentile(vs []float64, p float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	sort.Float64s(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// CompareWith records in r how it differs from prev, an earlier report
// (read back from its JSON), named label in the Markdown: the cases
// whose pass rate fell or rose, and those in only one of them.
func (r *Report) CompareWith(prev *Report, label string) *Comparison {
	c := &Comparison{Before: prev.Total, BeforeLabel: label, Regressions: []Change{}, Improvements: []Change{}}
	before := map[string]CaseResult{}
	for _, cr := range prev.Cases {
		before[cr.ID] = cr
	}
	now := map[string]bool{}
	for _, cr := range r.Cases {
		now[cr.ID] = true
		b, ok := before[cr.ID]
		if !ok {
			c.Added = append(c.Added, cr.ID)
			continue
		}
		ch := Change{Case: cr.ID, Before: b.Tally.PassRate, After: cr.Tally.PassRate, Reasons: reasonsOf(cr)}
		switch {
		case ch.After < ch.Before:
			c.Regressions = append(c.Regressions, ch)
		case ch.After > ch.Before:
			c.Improvements = append(c.Improvements, ch)
		}
	}
	for _, cr := range prev.Cases {
		if !now[cr.ID] {
			c.Removed = append(c.Removed, cr.ID)
		}
	}
	r.Compared = c
	return c
}

// reasonsOf lists the reasons a case's runs failed with, in order of
// first appearance.
func reasonsOf(cr CaseResult) []Reason {
	var out []Reason
	for _, run := range cr.Runs {
		for _, f := range run.Failures {
			if !slices.Contains(out, f.Reason) {
				out = append(out, f.Reason)
			}
		}
	}
	return out
}

// JSON writes r as indented JSON: what [ReadReport] reads back, for a
// later run to compare with.
func (r *Report) JSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// ReadReport reads a report from its JSON.
func ReadReport(r io.Reader) (*Report, error) {
	var rep Report
	if err := json.NewDecoder(r).Decode(&rep); err != nil {
		return nil, fmt.Errorf("askeval: reading a report: %w", err)
	}
	return &rep, nil
}

// Markdown writes r for people: the pass rate, by category and by case,
// the failures with their reasons, cost and latency, and the
// comparison, when there is one.
func (r *Report) Markdown(w io.Writer) error {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("# Ask evaluation: %d of %d runs passed (%s)\n\n", r.Total.Passed, r.Total.Runs, pct(r.Total.PassRate))
	p("Model: %s. Cases: %d, each run %d %s. Tool output reaches the model at the %s level.",
		cmp.Or(r.Provider, "not named"), r.Total.Cases, r.RunsPerCase, plural(r.RunsPerCase, "time"), cmp.Or(string(r.Sharing), "unknown"))
	if r.Judged {
		p(" An LLM judge was asked too.")
	}
	p("\n\n| category | cases | runs | passed | pass rate |\n| --- | ---: | ---: | ---: | ---: |\n")
	for _, c := range r.Categories {
		p("| %s | %d | %d | %d | %s |\n", c.Category, c.Tally.Cases, c.Tally.Runs, c.Tally.Passed, pct(c.Tally.PassRate))
	}
	p("| **all** | %d | %d | %d | **%s** |\n\n", r.Total.Cases, r.Total.Runs, r.Total.Passed, pct(r.Total.PassRate))

	p("## Cost and latency\n\n")
	u := r.Usage
	p("Tokens: %d input (%d read from the prompt cache, %d written to it), %d output.", u.InputTokens, u.CachedInputTokens, u.CacheWriteTokens, u.OutputTokens)
	if r.Cost != nil {
		p(" Cost: $%.4f (at $%g input, $%g output per million tokens).", *r.Cost, r.Prices.Input, r.Prices.Output)
	} else {
		p(" Cost: not known (providers report no prices: Options.Prices, or cmd/askeval's -price-input and -price-output).")
	}
	p(" Latency per question: p50 %s, p95 %s.\n\n", seconds(r.Latency.P50MS), seconds(r.Latency.P95MS))

	if c := r.Compared; c != nil {
		p("## Compared with %s\n\n", cmp.Or(c.BeforeLabel, "the earlier run"))
		p("Pass rate %s before, %s now: %d %s, %d %s.\n\n", pct(c.Before.PassRate), pct(r.Total.PassRate),
			len(c.Regressions), plural(len(c.Regressions), "regression"), len(c.Improvements), plural(len(c.Improvements), "improvement"))
		for _, ch := range c.Regressions {
			p("- regression: %s, %s → %s (%s)\n", ch.Case, pct(ch.Before), pct(ch.After), reasonList(ch.Reasons))
		}
		for _, ch := range c.Improvements {
			p("- improvement: %s, %s → %s\n", ch.Case, pct(ch.Before), pct(ch.After))
		}
		for _, id := range c.Added {
			p("- new case: %s\n", id)
		}
		for _, id := range c.Removed {
			p("- case no longer run: %s\n", id)
		}
		p("\n")
	}

	if len(r.Reasons) > 0 {
		p("## Why runs failed\n\n| reason | runs |\n| --- | ---: |\n")
		reasons := make([]Reason, 0, len(r.Reasons))
		for k := range r.Reasons {
			reasons = append(reasons, k)
		}
		sort.Slice(reasons, func(i, j int) bool {
			if r.Reasons[reasons[i]] != r.Reasons[reasons[j]] {
				return r.Reasons[reasons[i]] > r.Reasons[reasons[j]]
			}
			return reasons[i] < reasons[j]
		})
		for _, k := range reasons {
			p("| %s | %d |\n", k, r.Reasons[k])
		}
		p("\n")
	}

	p("## Cases\n\n| case | category | passed | failed with |\n| --- | --- | ---: | --- |\n")
	for _, c := range r.Cases {
		p("| %s | %s | %d/%d | %s |\n", c.ID, c.Category, c.Tally.Passed, c.Tally.Runs, reasonList(reasonsOf(c)))
	}
	var failed []string
	for _, c := range r.Cases {
		for _, run := range c.Runs {
			if run.Passed {
				continue
			}
			var parts []string
			for _, f := range run.Failures {
				parts = append(parts, string(f.Reason)+": "+cell(f.Detail))
			}
			line := fmt.Sprintf("- **%s** run %d: %s. Tools: %s.", c.ID, run.Run+1, strings.Join(parts, "; "), cmp.Or(strings.Join(run.Tools, ", "), "none"))
			if run.Answer != "" {
				line += " Answer: “" + cut(oneLine(run.Answer), 200) + "”"
			}
			failed = append(failed, line)
		}
	}
	if len(failed) > 0 {
		p("\n## Failed runs\n\n%s\n", strings.Join(failed, "\n"))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func pct(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) }

func seconds(ms float64) string {
	if ms < 1000 {
		return fmt.Sprintf("%.0f ms", ms)
	}
	return fmt.Sprintf("%.1f s", ms/1000)
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

func reasonList(rs []Reason) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = string(r)
	}
	return strings.Join(s, ", ")
}

// cell is s fit for one Markdown line.
func cell(s string) string {
	return strings.ReplaceAll(oneLine(s), "|", "\\|")
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// cut is s cut at n characters.
func cut(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
