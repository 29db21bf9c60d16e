package ask

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/internal/canonjson"
	"github.com/askbi/askbi/workspace"
)

// previewMemory bounds the history a turn reads to find the
// conversation's previews and whether placement was offered: the same
// window Open shows.
const previewMemory = maxViewEntries

// runTool runs a call of tool. A preview tool (Tool.Preview) first looks
// for the same request among the conversation's previews and returns
// that preview again when it still exists; a new preview is counted, and
// once the conversation holds Options.OfferPlacementAfter distinct
// previews its output carries, once per conversation, a placement_offer
// for the model to ask about.
func (tr *turn) runTool(ctx context.Context, tool Tool, call Call) (Output, error) {
	if err := tr.ownCharts(ctx, tool, call.Arguments); err != nil {
		return Output{}, err
	}
	if !tool.Preview {
		return tool.Run(ctx, call)
	}
	key := previewKey(call.Arguments)
	prior, offered, err := tr.previews(ctx, tool.Name)
	if err != nil {
		return Output{}, err
	}
	saved := make([]dataexec.ChartResult, len(prior))
	for i, p := range prior {
		saved[i] = p.result
	}
	now, err := tr.a.exec.RefreshCharts(ctx, tr.p, saved)
	if err != nil {
		return Output{}, err
	}
	for i, p := range prior {
		if p.key == key && now[i].Status != workspace.StatusUnavailable {
			return previewOutput("Reused preview", now[i], key, true), nil
		}
	}
	out, err := tool.Run(ctx, call)
	if err != nil {
		return out, err
	}
	data, isMap := out.Data.(map[string]any)
	made, isChart := out.Result.(dataexec.ChartResult)
	if !isMap || !isChart {
		return out, nil // not a preview: a scope mismatch, say
	}
	data["preview_key"] = key
	ids := []string{}
	for _, cr := range now {
		if cr.Status == workspace.StatusPreview && !slices.Contains(ids, cr.Chart.ID) {
			ids = append(ids, cr.Chart.ID)
		}
	}
	if made.Status == workspace.StatusPreview && !slices.Contains(ids, made.Chart.ID) {
		ids = append(ids, made.Chart.ID)
	}
	if !offered && len(ids) >= tr.a.o.OfferPlacementAfter {
		data["placement_offer"] = map[string]any{
			"previews":  len(ids),
			"chart_ids": ids,
			"note": "The conversation now has several previews. Ask the user once whether to place all of them on a dashboard, " +
				"and which one. Only when they agree and name or select one dashboard, call " + dataexec.PlaceChartsAction.Name + " with these chart_ids.",
		}
	}
	return out, nil
}

// ownCharts checks a call of a Tool.OwnCharts tool: every chart_ids
// entry must be a chart result of this conversation (NotFound otherwise,
// as for the direct placement).
func (tr *turn) ownCharts(ctx context.Context, tool Tool, args json.RawMessage) error {
	if !tool.OwnCharts {
		return nil
	}
	var in struct {
		ChartIDs []string `json:"chart_ids"`
	}
	if json.Unmarshal(args, &in) != nil {
		return askbi.Errorf(askbi.InvalidArgument, "chart_ids: must be a list of chart IDs")
	}
	runs, err := tr.a.stores.ToolRuns.ToolRuns(ctx, tr.conv.ID)
	if err != nil {
		return err
	}
	mine := map[string]bool{}
	for _, r := range runs {
		if cr, ok := chartOfRun(r); ok {
			mine[cr.Chart.ID] = true
		}
	}
	for _, id := range in.ChartIDs {
		if !mine[id] {
			return askbi.Errorf(askbi.NotFound, "chart not found in this conversation")
		}
	}
	return nil
}

// priorPreview is a preview a tool made earlier in the conversation.
type priorPreview struct {
	key    string
	result dataexec.ChartResult
}

// previews reads the conversation's earlier previews of tool, oldest
// first, and whether placement was offered already.
func (tr *turn) previews(ctx context.Context, tool string) ([]priorPreview, bool, error) {
	entries, err := tr.a.stores.Turns.Entries(ctx, tr.conv.ID, previewMemory)
	if err != nil {
		return nil, false, err
	}
	var out []priorPreview
	offered := false
	for _, e := range entries {
		if e.Role != RoleTool || e.Tool != tool {
			continue
		}
		var o struct {
			Key       string          `json:"preview_key"`
			Chart     dataexec.Ref    `json:"chart"`
			ChartType string          `json:"chart_type"`
			Datasets  []dataexec.Ref  `json:"datasets"`
			Offer     json.RawMessage `json:"placement_offer"`
		}
		if json.Unmarshal(e.Output, &o) != nil || o.Key == "" || o.Chart.ID == "" {
			continue
		}
		offered = offered || len(o.Offer) > 0
		out = append(out, priorPreview{key: o.Key, result: dataexec.ChartResult{Status: workspace.StatusPreview, Chart: o.Chart,
			ChartType: workspace.ChartType(o.ChartType), Datasets: o.Datasets}})
	}
	return out, offered, nil
}

// previewKey identifies a preview request: the hash of its canonical
// arguments without the name, so a reworded title is the same preview.
func previewKey(args json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(args, &m) != nil {
		return ""
	}
	delete(m, "name")
	b, _ := json.Marshal(m)
	canon, err := canonjson.Canonical(b)
	if err != nil {
		return ""
	}
	h, _ := canonjson.Hash(canon)
	return h
}

// previewOutput is the output of a chart preview action: the safe
// references for the client, and for the model their counts, the
// dataset references (with any scope) and the request's key.
func previewOutput(verb string, cr dataexec.ChartResult, key string, reused bool) Output {
	out := chartOutput(verb)(&cr)
	data := out.Data.(map[string]any)
	if key != "" {
		data["preview_key"] = key
	}
	if reused {
		data["reused"] = "an identical preview exists in this conversation; it is shown again, not made twice"
	}
	return out
}
