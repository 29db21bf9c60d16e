package ask

import (
	"context"
	"encoding/json"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/workspace"
)

// chartOfRun returns the chart result a tool run produced, if any.
func chartOfRun(r ToolRun) (dataexec.ChartResult, bool) {
	var cr dataexec.ChartResult
	if len(r.Result) == 0 || json.Unmarshal(r.Result, &cr) != nil || cr.Chart.Type != access.TypeChart || cr.Chart.ID == "" {
		return dataexec.ChartResult{}, false
	}
	return cr, true
}

// resultOf checks that chartID is one of the chart results of
// conversation id of live principal p, and returns the conversation and
// that result as it was saved.
func (a *Assistant) resultOf(ctx context.Context, p access.Principal, id, chartID string) (Conversation, dataexec.ChartResult, error) {
	conv, err := a.owned(ctx, p, id)
	if err != nil {
		return Conversation{}, dataexec.ChartResult{}, err
	}
	runs, err := a.stores.ToolRuns.ToolRuns(ctx, conv.ID)
	if err != nil {
		return Conversation{}, dataexec.ChartResult{}, err
	}
	for _, r := range runs {
		if cr, ok := chartOfRun(r); ok && cr.Chart.ID == chartID {
			return conv, cr, nil
		}
	}
	return Conversation{}, dataexec.ChartResult{}, askbi.Errorf(askbi.NotFound, "chart not found in this conversation")
}

// AddPreviewToDashboard is the direct action on a chart result: it never
// goes through the model. The conversation must be p's and the chart must
// be one of its results; placing uses the executor's normal chart-save
// path (access, validation, audit), and the preview is updated in place,
// so every copy of it in the conversation shows as saved.
func (a *Assistant) AddPreviewToDashboard(ctx context.Context, p access.Principal, conversationID, chartID, dashboardID string) (_ dataexec.ChartResult, err error) {
	defer askbi.Wrap(&err, "ask.Assistant.AddPreviewToDashboard")
	live, err := a.begin(ctx, p)
	if err != nil {
		return dataexec.ChartResult{}, err
	}
	conv, _, err := a.resultOf(ctx, live, conversationID, chartID)
	if err != nil {
		return dataexec.ChartResult{}, err
	}
	cr, err := dataexec.PlaceChartAction.Run(a.exec, ctx, live, dataexec.Placement{ChartID: chartID, DashboardID: dashboardID})
	if err != nil {
		return dataexec.ChartResult{}, err
	}
	res := cr.WithoutData()
	now := a.o.Now().UTC()
	b, _ := json.Marshal(res)
	run := ToolRun{CallID: newID("act"), ConversationID: conv.ID, Tool: dataexec.PlaceChartAction.Name, Label: "Added chart to dashboard",
		State: RunCompleted, Result: b, CreatedAt: now, UpdatedAt: now}
	return res, a.stores.ToolRuns.SaveToolRun(ctx, run)
}

// Links are the URLs of the pages of a chart result (the executor's
// Links), for an adapter answering a direct action.
func (a *Assistant) Links(cr dataexec.ChartResult) dataexec.ChartLinks {
	return a.exec.Links().Chart(cr)
}

// ChartView is a chart result as a client draws it: the result with its
// data, and the dashboards the user may place it on.
type ChartView struct {
	dataexec.ChartResult
	// PlaceOn lists, by name, the dashboards p may add this preview to
	// (dataexec.Destinations). It is empty for a saved or unavailable
	// chart and for a user who may edit no such dashboard (a viewer), so a
	// client hides placement.
	PlaceOn []dataexec.Ref `json:"place_on"`
	// Links are the URLs of the chart's pages (the executor's Links).
	Links dataexec.ChartLinks `json:"links"`
}

// Chart returns one of the chart results of a conversation with its data
// (labels and series, built by the executor as for any chart read), for a
// client to draw, and the dashboards p may place it on. The conversation
// must be p's and the chart one of its results. A chart that no longer
// exists answers StatusUnavailable, with the links to its datasets that
// still exist, not an error.
func (a *Assistant) Chart(ctx context.Context, p access.Principal, conversationID, chartID string) (_ *ChartView, err error) {
	defer askbi.Wrap(&err, "ask.Assistant.Chart")
	live, err := a.begin(ctx, p)
	if err != nil {
		return nil, err
	}
	_, saved, err := a.resultOf(ctx, live, conversationID, chartID)
	if err != nil {
		return nil, err
	}
	cr, err := dataexec.ChartDataAction.Run(a.exec, ctx, live, dataexec.ChartRun{ChartID: chartID})
	if err == nil {
		v := &ChartView{ChartResult: *cr, PlaceOn: []dataexec.Ref{}, Links: a.Links(*cr)}
		if cr.Status == workspace.StatusPreview {
			if v.PlaceOn, err = a.placeOn(ctx, live, cr.Chart.ProjectID); err != nil {
				return nil, err
			}
		}
		return v, nil
	}
	if askbi.ErrorCode(err) != askbi.NotFound {
		return nil, err
	}
	// The chart is gone: its saved result, re-read, says so.
	gone, err := a.exec.RefreshCharts(ctx, live, []dataexec.ChartResult{saved})
	if err != nil {
		return nil, err
	}
	return &ChartView{ChartResult: gone[0], PlaceOn: []dataexec.Ref{}, Links: a.Links(gone[0])}, nil
}

// placeOn lists the dashboards of project that live principal p may edit,
// by name: where a preview of that project can go.
func (a *Assistant) placeOn(ctx context.Context, p access.Principal, project string) ([]dataexec.Ref, error) {
	return dataexec.Destinations(ctx, a.exec, p, project)
}
