package dataexec_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/workspace"
)

func TestLinks(t *testing.T) {
	l := dataexec.PublicLinks("https://bi.example.com/")
	ds := []dataexec.Ref{{Type: access.TypeDataset, ID: "ds_1"}, {Type: access.TypeDataset, ID: "ds/2"}}
	dash := &dataexec.Ref{Type: access.TypeDashboard, ID: "dash_1"}
	tests := []struct {
		name string
		cr   dataexec.ChartResult
		want dataexec.ChartLinks
	}{
		{"preview", dataexec.ChartResult{Status: workspace.StatusPreview, Chart: dataexec.Ref{ID: "c1"}, Datasets: ds},
			dataexec.ChartLinks{Chart: "https://bi.example.com/previews/c1",
				Datasets: map[string]string{"ds_1": "https://bi.example.com/datasets/ds_1", "ds/2": "https://bi.example.com/datasets/ds%2F2"}}},
		{"saved", dataexec.ChartResult{Status: workspace.StatusSaved, Chart: dataexec.Ref{ID: "c1"}, Dashboard: dash},
			dataexec.ChartLinks{Chart: "https://bi.example.com/charts/c1", Dashboard: "https://bi.example.com/dashboards/dash_1"}},
		{"unavailable keeps dataset links", dataexec.ChartResult{Status: workspace.StatusUnavailable, Chart: dataexec.Ref{ID: "c1"}, Datasets: ds[:1]},
			dataexec.ChartLinks{Datasets: map[string]string{"ds_1": "https://bi.example.com/datasets/ds_1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, l.Chart(tt.cr)); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
	// A host maps pages to its own routes, or has none for one.
	host := dataexec.Links(func(p dataexec.Page, id string) string {
		if p == dataexec.PagePreview {
			return ""
		}
		return "/app/" + string(p) + "?id=" + id
	})
	got := host.Chart(dataexec.ChartResult{Status: workspace.StatusPreview, Chart: dataexec.Ref{ID: "c1"}, Datasets: ds[:1]})
	if diff := cmp.Diff(dataexec.ChartLinks{Datasets: map[string]string{"ds_1": "/app/datasets?id=ds_1"}}, got); diff != "" {
		t.Errorf("host links mismatch (-want +got):\n%s", diff)
	}
	if got := dataexec.NewExecutor(workspace.NewMemoryCatalog(), nil, nil).Links()(dataexec.PageChart, "c1"); got != "/charts/c1" {
		t.Errorf("default links = %q, want same-origin /charts/c1", got)
	}
}
