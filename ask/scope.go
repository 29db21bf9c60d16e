package ask

import (
	"context"
	"encoding/json"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/workspace"
)

// scopeChecked makes a tool that reads a dataset (arguments dataset_id and
// optional filters) refuse a request broader than the dataset's scope: when
// the call's filters and the user's message do not include every condition
// of the scope (dataexec.Uncovered), nothing runs and the output marks the
// mismatch, naming the scope and the unscoped dataset when there is one, so
// the model says which scope the data has and asks. A dataset the
// principal cannot read is left to the action's own checks.
func scopeChecked(exec *dataexec.Executor, t Tool) Tool {
	run := t.Run
	t.Run = func(ctx context.Context, call Call) (Output, error) {
		var in struct {
			DatasetID string             `json:"dataset_id"`
			Filters   []workspace.Filter `json:"filters"`
		}
		if json.Unmarshal(call.Arguments, &in) != nil || in.DatasetID == "" {
			return run(ctx, call)
		}
		refs, err := exec.Resolve(ctx, call.Principal, []access.Entity{{Type: access.TypeDataset, ID: in.DatasetID}})
		if err != nil || refs[0] == nil || refs[0].Scope == nil {
			return run(ctx, call)
		}
		missing := dataexec.Uncovered(refs[0].Scope.Filters, in.Filters, call.Message)
		if len(missing) == 0 {
			return run(ctx, call)
		}
		return scopeMismatch(*refs[0], missing), nil
	}
	return t
}

// scopeMismatch is the output of a call refused for its dataset's scope.
func scopeMismatch(ds dataexec.Ref, missing []workspace.Filter) Output {
	m := map[string]any{
		"dataset":   ds,
		"scope":     ds.Scope.Text,
		"not_asked": dataexec.ScopeText(missing),
		"note": "Nothing was run: this dataset holds only rows where " + ds.Scope.Text +
			", and the request does not include that scope. Tell the user which scope the data has and ask whether to use it for that scope",
	}
	if u := ds.Scope.Unscoped; u != nil {
		m["unscoped"] = u
		m["note"] = m["note"].(string) + ", or offer the unscoped dataset " + u.Name + "."
	} else {
		m["note"] = m["note"].(string) + "."
	}
	return Output{Summary: "Scope not included: " + ds.Scope.Text, Data: map[string]any{"scope_mismatch": m}}
}
