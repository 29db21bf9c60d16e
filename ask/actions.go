package ask

import (
	"context"
	"encoding/json"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
)

// AddPreviewToDashboard is the direct action on a chart result: it never
// goes through the model. The conversation must be p's and the chart must
// be one of its results; placing uses the executor's normal chart-save
// path (access, validation, audit), and the preview is updated in place,
// so every copy of it in the conversation shows as saved.
func (a *Assistant) AddPreviewToDashboard(ctx context.Context, p access.Principal, conversationID, chartID, dashboardID string) (_ ChartResult, err error) {
	defer askbi.Wrap(&err, "ask.Assistant.AddPreviewToDashboard")
	live, err := a.begin(ctx, p)
	if err != nil {
		return ChartResult{}, err
	}
	conv, err := a.owned(ctx, live, conversationID)
	if err != nil {
		return ChartResult{}, err
	}
	runs, err := a.convs.ToolRuns(ctx, conv.ID)
	if err != nil {
		return ChartResult{}, err
	}
	found := false
	for _, r := range runs {
		var cr ChartResult
		if json.Unmarshal(r.Result, &cr) == nil && cr.Chart != nil && cr.Chart.ID == chartID {
			found = true
		}
	}
	if !found {
		return ChartResult{}, askbi.Errorf(askbi.NotFound, "chart not found in this conversation")
	}
	cr, err := a.exec.PlaceChart(ctx, live, chartID, dashboardID)
	if err != nil {
		return ChartResult{}, err
	}
	res := chartResultOf(cr)
	now := a.o.Now().UTC()
	b, _ := json.Marshal(res)
	run := ToolRun{CallID: newID("act"), ConversationID: conv.ID, Tool: "add_preview_to_dashboard", Label: "Added chart to dashboard",
		State: RunCompleted, Result: b, CreatedAt: now, UpdatedAt: now}
	return res, a.convs.SaveToolRun(ctx, run)
}
