package dataexec

import (
	"net/url"
	"strings"

	"github.com/askbi/askbi/workspace"
)

// Page is a product page that results link to.
type Page string

// The pages behind the links of chart, dataset and dashboard results.
const (
	PagePreview   Page = "previews"   // a preview chart: the chart and where to place it
	PageChart     Page = "charts"     // a saved chart
	PageDashboard Page = "dashboards" // a dashboard
	PageDataset   Page = "datasets"   // a dataset
)

// Links returns the URL at which the product shows entity id on page: the
// one place a host maps results to its own routes. The chat adapters (ask,
// askhttp, datahttp) and the MCP server all link through the Executor's
// Links (Options.Links), so they cannot disagree. It must be safe for
// concurrent use and return "" for a page the host does not have (the
// result then carries no link).
type Links func(page Page, id string) string

// PublicLinks are the Links of the reference routes under base, a public
// URL such as "https://bi.example.com" (or "" for paths on the same
// origin): base + "/previews/{id}", "/charts/{id}", "/dashboards/{id}" and
// "/datasets/{id}", the ID path-escaped.
func PublicLinks(base string) Links {
	base = strings.TrimRight(base, "/")
	return func(page Page, id string) string {
		if id == "" {
			return ""
		}
		return base + "/" + string(page) + "/" + url.PathEscape(id)
	}
}

// ChartLinks are the URLs of a chart result's parts.
type ChartLinks struct {
	// Chart opens the chart: its preview page while it is a preview, its
	// chart page once saved; empty when it is unavailable.
	Chart string `json:"chart,omitempty"`
	// Dashboard opens the dashboard a saved chart is on.
	Dashboard string `json:"dashboard,omitempty"`
	// Datasets opens each listed dataset, by dataset ID.
	Datasets map[string]string `json:"datasets,omitempty"`
}

// Chart returns the links of chart result cr.
func (l Links) Chart(cr ChartResult) ChartLinks {
	var out ChartLinks
	switch cr.Status {
	case workspace.StatusPreview:
		out.Chart = l(PagePreview, cr.Chart.ID)
	case workspace.StatusSaved:
		out.Chart = l(PageChart, cr.Chart.ID)
	}
	if cr.Dashboard != nil && cr.Status == workspace.StatusSaved {
		out.Dashboard = l(PageDashboard, cr.Dashboard.ID)
	}
	for _, d := range cr.Datasets {
		if u := l(PageDataset, d.ID); u != "" {
			if out.Datasets == nil {
				out.Datasets = map[string]string{}
			}
			out.Datasets[d.ID] = u
		}
	}
	return out
}

// Links returns how results link to the product's pages (Options.Links).
func (e *Executor) Links() Links { return e.links }
