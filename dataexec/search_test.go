package dataexec_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/workspace"
	"github.com/askbi/askbi/workspace/workspacetest"
)

func TestSearch(t *testing.T) {
	e := newEnv(t, nil)
	ref := func(typ access.EntityType, id, name, project, info string) dataexec.Ref {
		return dataexec.Ref{Type: typ, ID: id, Name: name, ProjectID: project, Info: info}
	}
	var (
		cSignups = ref(access.TypeChart, "c-signups", "Signups by day", "growth", "Growth overview · line chart")
		cDraft   = ref(access.TypeChart, "c-draft", "Signups draft", "growth", "Preview · bar chart") // bob's
		cAlice   = ref(access.TypeChart, "c-alice", "Alice's draft", "growth", "Preview · line chart")
		dsSign   = ref(access.TypeDataset, "signups", "Signups", "growth", "Warehouse · PostgreSQL")
		dsMRR    = ref(access.TypeDataset, "mrr", "MRR", "finance", "Ledger · PostgreSQL")
		dsShop   = ref(access.TypeDataset, "shop", "Shop orders", "growth", "Old shop · MySQL")
		dGrowth  = ref(access.TypeDashboard, "d-growth", "Growth overview", "growth", "1 chart")
		dFin     = ref(access.TypeDashboard, "d-fin", "Finance", "finance", "0 charts")
		cnWH     = ref(access.TypeConnection, "wh", "Warehouse", "", "PostgreSQL · active")
		cnFin    = ref(access.TypeConnection, "fin", "Ledger", "finance", "PostgreSQL · active")
		cnLegacy = ref(access.TypeConnection, "legacy", "Old shop", "", "MySQL · active")
		cnOff    = ref(access.TypeConnection, "off", "Pending", "", "MCP · inactive")
	)
	growthKey := apiKey("alice", "acme", "k-growth", access.ProjectSet("growth"), access.ScopeDataRead)
	e.dir.SetMember("acme", "val", access.RoleViewer, access.ProjectSet("growth"))
	for _, tc := range []struct {
		name string
		p    access.Principal
		q    dataexec.SearchQuery
		want []dataexec.Ref
	}{
		// Each member's search lists its own previews and no other's.
		{"recent items", alice, dataexec.SearchQuery{},
			[]dataexec.Ref{dGrowth, dFin, dsSign, dsMRR, dsShop, cSignups, cAlice, cnWH, cnFin, cnLegacy, cnOff}},
		{"name match, any case", vic, dataexec.SearchQuery{Text: "SIGNUPS"}, []dataexec.Ref{dsSign, cSignups}},
		{"types", vic, dataexec.SearchQuery{Text: "signups", Types: []access.EntityType{access.TypeChart}}, []dataexec.Ref{cSignups}},
		{"types, the preview's creator", bob, dataexec.SearchQuery{Text: "signups", Types: []access.EntityType{access.TypeChart}}, []dataexec.Ref{cSignups, cDraft}},
		{"connections for the context picker", vic, dataexec.SearchQuery{Types: []access.EntityType{access.TypeConnection}},
			[]dataexec.Ref{cnWH, cnFin, cnLegacy, cnOff}},
		{"editor with one project", bob, dataexec.SearchQuery{},
			[]dataexec.Ref{dGrowth, dsSign, dsShop, cSignups, cDraft, cnWH, cnLegacy, cnOff}},
		{"viewer with one project", session("val", "acme"), dataexec.SearchQuery{},
			[]dataexec.Ref{dGrowth, dsSign, dsShop, cSignups, cnWH, cnLegacy, cnOff}},
		{"selected-project key", growthKey, dataexec.SearchQuery{Text: "e"},
			[]dataexec.Ref{dGrowth, dsShop, cAlice, cnWH, cnOff}},
		{"another team sees only its own", carol, dataexec.SearchQuery{Text: "s"},
			[]dataexec.Ref{ref(access.TypeDashboard, "d-ops", "Ops", "ops", "1 chart"), ref(access.TypeDataset, "tickets", "Tickets", "ops", "Globex DB · PostgreSQL"),
				ref(access.TypeChart, "c-ops", "Tickets", "ops", "Ops · bar chart")}},
		{"limit", alice, dataexec.SearchQuery{Limit: 2}, []dataexec.Ref{dGrowth, dFin}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := e.exec.Search(ctx, tc.p, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Search mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSearchLimits(t *testing.T) {
	e := newEnv(t, nil)
	for i := range 60 {
		e.cat.PutDashboard(workspace.Dashboard{ID: fmt.Sprintf("bulk-%02d", i), TeamID: "acme", ProjectID: "growth",
			Name: fmt.Sprintf("Bulk %02d", i), UpdatedAt: t0.Add(time.Duration(i) * time.Second)})
	}
	for _, tc := range []struct {
		limit int
		want  int
		code  askbi.Code
	}{
		{0, 20, ""}, {1, 1, ""}, {50, 50, ""}, {51, 0, askbi.InvalidArgument}, {-1, 0, askbi.InvalidArgument},
	} {
		t.Run(fmt.Sprint(tc.limit), func(t *testing.T) {
			got, err := e.exec.Search(ctx, alice, dataexec.SearchQuery{Text: "bulk", Limit: tc.limit})
			mustCode(t, err, tc.code)
			if err != nil && askbi.ErrorMessage(err) != "limit must be between 1 and 50" {
				t.Errorf("message = %q", askbi.ErrorMessage(err))
			}
			if len(got) != tc.want {
				t.Errorf("got %d results, want %d", len(got), tc.want)
			}
			if len(got) > 0 && got[0].Name != "Bulk 59" {
				t.Errorf("first result %q, want the most recent, Bulk 59", got[0].Name)
			}
		})
	}
	for _, tc := range []struct {
		name string
		p    access.Principal
		q    dataexec.SearchQuery
		code askbi.Code
	}{
		{"unknown type", alice, dataexec.SearchQuery{Types: []access.EntityType{"team"}}, askbi.InvalidArgument},
		{"key without data:read", apiKey("alice", "acme", "k", access.AllProjects(), access.ScopeChartsPreview), dataexec.SearchQuery{}, askbi.ScopeRequired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.exec.Search(ctx, tc.p, tc.q)
			mustCode(t, err, tc.code)
		})
	}
}

// laxCatalog ignores team and project filters in Search, as a careless host
// might; the Executor must still return only what the principal may read.
type laxCatalog struct{ *workspace.MemoryCatalog }

func (c laxCatalog) Search(ctx2 context.Context, q workspace.CatalogQuery) ([]workspace.SearchRow, error) {
	var all []workspace.SearchRow
	for _, team := range []string{"acme", "globex"} {
		rows, err := c.MemoryCatalog.Search(ctx2, workspace.CatalogQuery{TeamID: team, Text: q.Text, Projects: access.AllProjects(), Limit: 100})
		if err != nil {
			return nil, err
		}
		all = append(all, rows...)
	}
	return all, nil
}

func TestSearchRechecksAccess(t *testing.T) {
	e := newEnv(t, nil)
	exec := gated{e.exec.gate, dataexec.NewExecutor(laxCatalog{e.cat}, dataexec.SourceMap{}, nil)}
	got, err := exec.Search(ctx, bob, dataexec.SearchQuery{Types: []access.EntityType{access.TypeDataset}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range got {
		ids = append(ids, r.ID)
	}
	if diff := cmp.Diff([]string{"signups", "shop"}, ids); diff != "" {
		t.Errorf("Search mismatch (-want +got):\n%s", diff)
	}
}

func TestMemoryCatalog(t *testing.T) {
	workspacetest.Run(t, func(t *testing.T, f workspacetest.Fixture) workspace.Catalog {
		return f.Memory()
	})
}

// TestReadOnlyCatalogSuite runs the suite over a catalog that is not a
// CatalogWriter: the reads must pass, and each Writer test must skip.
func TestReadOnlyCatalogSuite(t *testing.T) {
	workspacetest.Run(t, func(t *testing.T, f workspacetest.Fixture) workspace.Catalog {
		return readOnly{f.Memory()}
	})
}

// readOnly hides the CatalogWriter methods of the catalog it wraps.
type readOnly struct{ workspace.Catalog }
