package ask

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/askbi/askbi"
)

// SharingPolicy is the host's per-team decision on what tool output may
// reach an external model.
type SharingPolicy interface {
	// Sharing returns the team's level. Errors are passed through.
	Sharing(ctx context.Context, teamID string) (Sharing, error)
}

// StaticSharing is a [SharingPolicy] with one level for every team.
type StaticSharing Sharing

// Sharing implements [SharingPolicy].
func (s StaticSharing) Sharing(context.Context, string) (Sharing, error) { return Sharing(s), nil }

// Sharing is how much of a tool's output may reach an external model. The
// host sets it per team; each saved tool output is stamped with the level
// in force when it was produced, and replay never uses a higher one.
type Sharing string

// Sharing levels, from least to most.
const (
	SharingSchema     Sharing = "schema"     // field names and types only
	SharingAggregates Sharing = "aggregates" // plus counts and numeric summaries
	SharingRows       Sharing = "rows"       // plus the rows themselves
)

var sharingRank = map[Sharing]int{SharingSchema: 0, SharingAggregates: 1, SharingRows: 2}

// ParseSharing is the level a host's configuration names: "schema",
// "aggregates" or "rows". Another name is InvalidArgument.
func ParseSharing(name string) (Sharing, error) {
	if _, ok := sharingRank[Sharing(name)]; !ok {
		return "", askbi.Errorf(askbi.InvalidArgument, "must be schema, aggregates or rows")
	}
	return Sharing(name), nil
}

// minSharing is the lower of two levels; an unknown level counts as
// schema only.
func minSharing(a, b Sharing) Sharing {
	ra, okA := sharingRank[a]
	rb, okB := sharingRank[b]
	switch {
	case !okA || !okB:
		return SharingSchema
	case rb < ra:
		return b
	}
	return a
}

// isoDate is a cell TableFilter reads as a date: a year, a month or a day.
var isoDate = regexp.MustCompile(`^[0-9]{4}(-[0-9]{2}(-[0-9]{2})?)?$`)

// dateRange is the earliest and latest value of column i and how many
// rows hold one, when every value there is an ISO date; n is 0 otherwise.
func dateRange(rows []any, i int) (first, last string, n int) {
	for _, r := range rows {
		row, _ := r.([]any)
		if i >= len(row) || row[i] == nil {
			continue
		}
		v, ok := row[i].(string)
		if !ok || !isoDate.MatchString(v) {
			return "", "", 0
		}
		if n == 0 || v < first {
			first = v
		}
		if n == 0 || v > last {
			last = v
		}
		n++
	}
	return first, last, n
}

// ShowAll is the Filter of tools whose output holds no rows (references,
// names, counts): the model sees it at every level. A tool must say so:
// it is not the default (see [ShapeOnly]).
func ShowAll(data json.RawMessage, _ Sharing) json.RawMessage { return data }

// ShapeOnly is the Filter of a tool that declares none (seed 004: the
// strictest level unless a tool says what it may share): at every level
// the model sees only the output's shape, its keys and each value's JSON
// type ("string", "number", "boolean", "null"; a list as the shape of its
// first item), never a value.
func ShapeOnly(data json.RawMessage, _ Sharing) json.RawMessage {
	var v any
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return json.RawMessage(`{"error":"output withheld"}`)
	}
	b, _ := json.Marshal(map[string]any{"shape": shape(v),
		"values_withheld": "this tool does not declare that its values may be shared with the model"})
	return b
}

// shape is v with every value replaced by its JSON type.
func shape(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = shape(e)
		}
		return out
	case []any:
		if len(x) == 0 {
			return []any{}
		}
		return []any{shape(x[0])}
	case string:
		return "string"
	case json.Number:
		return "number"
	case bool:
		return "boolean"
	}
	return "null"
}

// TableFilter is the Filter of tools that return a table ({"columns":
// [...], "rows": [[...]], ...}): schema shows the columns and row count;
// aggregates adds per-column numeric summaries (count, min, max, sum) and
// the range of date columns (count, earliest, latest: a column whose
// every value is an ISO date such as 2026-11-02 or 2026-11), so a model
// can answer "the last 8 weeks"; rows shows the rows too.
func TableFilter(data json.RawMessage, level Sharing) json.RawMessage {
	var t map[string]any
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(&t); err != nil {
		return json.RawMessage(`{"error":"output withheld"}`)
	}
	rows, _ := t["rows"].([]any)
	if level == SharingRows {
		return data
	}
	delete(t, "rows")
	if level == SharingAggregates {
		cols, _ := t["columns"].([]any)
		stats := map[string]any{}
		for i, c := range cols {
			name, _ := c.(string)
			var n int
			var min, max, sum float64
			for _, r := range rows {
				row, _ := r.([]any)
				if i >= len(row) {
					continue
				}
				num, ok := row[i].(json.Number)
				if !ok {
					continue
				}
				f, err := num.Float64()
				if err != nil {
					continue
				}
				if n == 0 || f < min {
					min = f
				}
				if n == 0 || f > max {
					max = f
				}
				sum += f
				n++
			}
			if n > 0 {
				stats[name] = map[string]any{"count": n, "min": min, "max": max, "sum": sum}
			} else if first, last, n := dateRange(rows, i); n > 0 {
				stats[name] = map[string]any{"count": n, "earliest": first, "latest": last}
			}
		}
		t["aggregates"] = stats
	}
	t["rows_withheld"] = fmt.Sprintf("rows are not shared with the model at the %q level", level)
	b, _ := json.Marshal(t)
	return b
}
