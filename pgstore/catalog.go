package pgstore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/workspace"
)

// Catalog is the workspace catalog in PostgreSQL: a [workspace.Catalog],
// CatalogWriter and ConnectionWriter that passes workspacetest.Run. Each
// entity is one row of catalog_entities holding the whole value as JSON
// (so fields dataexec adds later are kept) beside the columns search and
// keys need. Every change is one transaction: a write that fails leaves
// nothing behind. Placing a chart locks the chart row and holds the
// dashboard row, so concurrent placements and a concurrent delete of the
// dashboard settle in the database, across processes. It is safe for
// concurrent use.
//
// While the database cannot be reached, a single-entity read (Dashboard,
// Chart, Dataset, Connection) answers with this value's last successful
// read of that entity when it is at most [StaleFor] old, so a result the
// executor still has cached is served, under the same access checks, on
// the definitions of a moment ago. Any write through this value forgets
// every last read at once, so nothing it deleted or changed comes back,
// and tells the other instances on the database to forget theirs (see
// Listen and Forget). Search and writes are never served stale.
type Catalog struct {
	db *sqlx.DB
	// followed is set while change notifications reach this value
	// (DB.Listen): its last reads then stand for reads (see Follow).
	followed atomic.Bool

	mu   sync.Mutex
	gen  uint64              // bumped by every write, before and after
	last map[string]lastRead // by type and ID
}

// Follow says whether the catalog writes of every instance reach this
// value as change notifications (Listen with [ForgetCaches], which
// DB.Listen sets up). While they do, a single-entity read is answered
// from this value's last read of that entity when it is at most
// [StaleFor] old, with no round trip: a write anywhere forgets it within
// a moment, a write through this value at once, and a lost listening
// connection forgets everything on the reconnect. Off (the default),
// every read goes to the database.
func (c *Catalog) Follow(on bool) { c.followed.Store(on) }

// StaleFor is how old a Catalog's last read of an entity may be to stand
// in for a read while the database is unavailable: the API-key cache's
// 30 s ([access.DefaultKeyCacheTTL]), the same bound on a change made by
// another instance.
const StaleFor = access.DefaultKeyCacheTTL

// maxLastReads bounds the last reads a Catalog keeps.
const maxLastReads = 10000

type lastRead struct {
	doc string
	at  time.Time
}

var (
	_ workspace.Catalog          = (*Catalog)(nil)
	_ workspace.CatalogWriter    = (*Catalog)(nil)
	_ workspace.ConnectionWriter = (*Catalog)(nil)
)

// NewCatalog returns a Catalog on a migrated database.
func NewCatalog(db *sqlx.DB) *Catalog { return &Catalog{db: db, last: map[string]lastRead{}} }

// CatalogSeed is a set of entities Seed stores once.
type CatalogSeed struct {
	Connections []workspace.Connection
	Dashboards  []workspace.Dashboard
	Datasets    []workspace.Dataset
	Charts      []workspace.Chart
}

// catalogRow is one catalog_entities row.
type catalogRow struct {
	Type         string    `db:"type"`
	ID           string    `db:"id"`
	TeamID       string    `db:"team_id"`
	ProjectID    string    `db:"project_id"`
	Name         string    `db:"name"`
	UpdatedAt    time.Time `db:"updated_at"`
	DashboardID  string    `db:"dashboard_id"`
	ConnectionID string    `db:"connection_id"`
	Doc          string    `db:"doc"`
}

// rowOf returns the row that stores v.
func rowOf(v any) (catalogRow, error) {
	var r catalogRow
	var e access.Entity
	switch v := v.(type) {
	case workspace.Dashboard:
		e, r.Name, r.UpdatedAt = v.Ref(), v.Name, v.UpdatedAt
	case workspace.Chart:
		e, r.Name, r.UpdatedAt, r.DashboardID = v.Ref(), v.Name, v.UpdatedAt, v.DashboardID
	case workspace.Dataset:
		e, r.Name, r.UpdatedAt, r.ConnectionID = v.Ref(), v.Name, v.UpdatedAt, v.Request.ConnectionID
	case workspace.Connection:
		e, r.Name, r.UpdatedAt = v.Ref(), v.Name, v.UpdatedAt
	default:
		panic("pgstore: not a catalog entity")
	}
	r.Type, r.ID, r.TeamID, r.ProjectID = string(e.Type), e.ID, e.TeamID, e.ProjectID
	doc, err := json.Marshal(v)
	if err != nil {
		return catalogRow{}, askbi.Errorf(askbi.InvalidArgument, "%s: %v", e.Type, err)
	}
	r.Doc = string(doc)
	return r, nil
}

const catalogColumns = `type, id, team_id, project_id, name, updated_at, dashboard_id, connection_id, doc`

// insert stores r; with replace, it overwrites the row of the same type
// and ID, else a taken ID is Conflict.
func insert(ctx context.Context, db execer, r catalogRow, replace bool) error {
	q := `INSERT INTO catalog_entities (` + catalogColumns + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`
	if replace {
		q += ` ON CONFLICT (type, id) DO UPDATE SET team_id = EXCLUDED.team_id, project_id = EXCLUDED.project_id,
			name = EXCLUDED.name, updated_at = EXCLUDED.updated_at, dashboard_id = EXCLUDED.dashboard_id,
			connection_id = EXCLUDED.connection_id, doc = EXCLUDED.doc`
	}
	return write(ctx, db, "pgstore.Catalog.insert", askbi.Errorf(askbi.Conflict, "%s already exists", r.Type), q,
		r.Type, r.ID, r.TeamID, r.ProjectID, r.Name, r.UpdatedAt, r.DashboardID, r.ConnectionID, r.Doc)
}

// getter reads rows: the database or a transaction.
type getter interface {
	GetContext(ctx context.Context, dest any, query string, args ...any) error
}

// get reads entity typ id into a T; lock appends a row-lock clause.
func get[T any](ctx context.Context, db getter, typ access.EntityType, id, lock string) (T, error) {
	var v T
	doc, err := getDoc(ctx, db, typ, id, lock)
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		return v, internal("pgstore.Catalog.get", err)
	}
	return v, nil
}

// getDoc reads entity typ id's document.
func getDoc(ctx context.Context, db getter, typ access.EntityType, id, lock string) (string, error) {
	var doc string
	err := db.GetContext(ctx, &doc, `SELECT doc FROM catalog_entities WHERE type = $1 AND id = $2`+lock, typ, id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", askbi.Errorf(askbi.NotFound, "%s not found", typ)
	}
	if err != nil {
		return "", internal("pgstore.Catalog.get", err)
	}
	return doc, nil
}

// read is a single-entity read that falls back to the last one while the
// database is unavailable (see Catalog).
func read[T any](ctx context.Context, c *Catalog, typ access.EntityType, id string) (T, error) {
	var v T
	key := string(typ) + "/" + id
	c.mu.Lock()
	gen := c.gen
	l, kept := c.last[key]
	c.mu.Unlock()
	if kept && c.followed.Load() && time.Since(l.at) <= StaleFor {
		if err := json.Unmarshal([]byte(l.doc), &v); err != nil {
			return v, internal("pgstore.Catalog.get", err)
		}
		return v, nil
	}
	doc, err := getDoc(ctx, c.db, typ, id, "")
	c.mu.Lock()
	switch {
	case err == nil && gen == c.gen:
		if len(c.last) >= maxLastReads {
			clear(c.last)
		}
		c.last[key] = lastRead{doc: doc, at: time.Now()}
	case askbi.ErrorCode(err) == askbi.Unavailable && ctx.Err() == nil:
		if l, ok := c.last[key]; ok && time.Since(l.at) <= StaleFor {
			doc, err = l.doc, nil
		}
	}
	c.mu.Unlock()
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		return v, internal("pgstore.Catalog.get", err)
	}
	return v, nil
}

// wrote forgets every last read; writes call it before and after they
// run (defer c.wrote(ctx)()), so no read that raced a write is kept.
// After the write it tells the other instances on the database to forget
// theirs too (Listen, then Forget); should that notification be lost,
// their last reads still expire after StaleFor.
func (c *Catalog) wrote(ctx context.Context) func() {
	c.Forget()
	return func() {
		c.Forget()
		// A failure means the database is gone too: nothing reads it
		// meanwhile, and the other instances' last reads expire.
		c.db.ExecContext(context.WithoutCancel(ctx), notifySQL, "catalog")
	}
}

// Forget drops every last read, because another instance changed the
// catalog (a "catalog" Change).
func (c *Catalog) Forget() {
	c.mu.Lock()
	c.gen++
	clear(c.last)
	c.mu.Unlock()
}

// Dashboard implements [workspace.Catalog].
func (c *Catalog) Dashboard(ctx context.Context, id string) (workspace.Dashboard, error) {
	return read[workspace.Dashboard](ctx, c, access.TypeDashboard, id)
}

// Chart implements [workspace.Catalog].
func (c *Catalog) Chart(ctx context.Context, id string) (workspace.Chart, error) {
	return read[workspace.Chart](ctx, c, access.TypeChart, id)
}

// Dataset implements [workspace.Catalog].
func (c *Catalog) Dataset(ctx context.Context, id string) (workspace.Dataset, error) {
	return read[workspace.Dataset](ctx, c, access.TypeDataset, id)
}

// Connection implements [workspace.Catalog].
func (c *Catalog) Connection(ctx context.Context, id string) (workspace.Connection, error) {
	return read[workspace.Connection](ctx, c, access.TypeConnection, id)
}

// Search implements [workspace.Catalog], in one query: the text matches
// literally (strpos, not LIKE), ties in updated_at order by ID in byte
// order, as Go compares strings, and a preview (a chart on no dashboard)
// is left out unless q.UserID created it, before the limit. The creator
// is read from the chart's document (created_by), which every chart
// stored before creators were recorded lacks: such a preview is nobody's.
func (c *Catalog) Search(ctx context.Context, q workspace.CatalogQuery) ([]workspace.SearchRow, error) {
	types := make([]string, len(q.Types))
	for i, t := range q.Types {
		types[i] = string(t)
	}
	var rows []struct {
		catalogRow
		ChartCount     int    `db:"chart_count"`
		ChartType      string `db:"chart_type"`
		DashboardName  string `db:"dashboard_name"`
		ConnectionName string `db:"connection_name"`
		ConnectionType string `db:"connection_type"`
		Active         bool   `db:"active"`
		CreatedBy      string `db:"created_by"`
	}
	err := c.db.SelectContext(ctx, &rows, `SELECT e.type, e.id, e.team_id, e.project_id, e.name, e.updated_at,
			e.dashboard_id, e.connection_id,
			CASE WHEN e.type = 'dataset' THEN e.doc::text ELSE '' END AS doc,
			CASE WHEN e.type = 'dashboard' THEN (SELECT count(*) FROM catalog_entities ch
				WHERE ch.type = 'chart' AND ch.dashboard_id = e.id) ELSE 0 END AS chart_count,
			CASE WHEN e.type = 'chart' THEN COALESCE(e.doc->>'chart_type', '') ELSE '' END AS chart_type,
			COALESCE(d.name, '') AS dashboard_name,
			COALESCE(cn.name, '') AS connection_name,
			COALESCE(cn.doc->>'type', '') AS connection_type,
			COALESCE((cn.doc->>'active')::boolean, false) AS active,
			CASE WHEN e.type = 'chart' THEN COALESCE(e.doc->>'created_by', '') ELSE '' END AS created_by
		FROM catalog_entities e
		LEFT JOIN catalog_entities d ON e.type = 'chart' AND d.type = 'dashboard' AND d.id = e.dashboard_id
		LEFT JOIN catalog_entities cn ON cn.type = 'connection'
			AND ((e.type = 'dataset' AND cn.id = e.connection_id) OR (e.type = 'connection' AND cn.id = e.id))
		WHERE e.team_id = $1
		  AND strpos(lower(e.name), lower($2)) > 0
		  AND (cardinality($3::text[]) = 0 OR e.type = ANY($3::text[]))
		  AND (e.project_id = '' OR $4 OR e.project_id = ANY($5::text[]))
		  AND (e.type <> 'chart' OR e.dashboard_id <> '' OR ($7 <> '' AND e.doc->>'created_by' = $7))
		ORDER BY e.updated_at DESC, e.id
		LIMIT GREATEST($6, 0)`,
		q.TeamID, q.Text, pq.Array(types), q.Projects.All, pq.Array(q.Projects.IDs), q.Limit, q.UserID)
	if err != nil {
		return nil, internal("pgstore.Catalog.Search", err)
	}
	out := make([]workspace.SearchRow, len(rows))
	for i, r := range rows {
		var scope []workspace.Filter
		if r.Type == string(access.TypeDataset) {
			// A dataset's info line names its scope.
			var d workspace.Dataset
			if err := json.Unmarshal([]byte(r.Doc), &d); err != nil {
				return nil, internal("pgstore.Catalog.Search", err)
			}
			scope = d.Conditions()
		}
		ent := access.Entity{Type: access.EntityType(r.Type), ID: r.ID, TeamID: r.TeamID, ProjectID: r.ProjectID}
		if ent.Type == access.TypeChart {
			ent = workspace.Chart{ID: r.ID, TeamID: r.TeamID, ProjectID: r.ProjectID, DashboardID: r.DashboardID, CreatedBy: r.CreatedBy}.Ref()
		}
		out[i] = workspace.SearchRow{Scope: scope,
			Entity:     ent,
			Name:       r.Name,
			UpdatedAt:  r.UpdatedAt.UTC(),
			ChartCount: r.ChartCount, ChartType: workspace.ChartType(r.ChartType), DashboardName: r.DashboardName,
			ConnectionName: r.ConnectionName, ConnectionType: r.ConnectionType, Active: r.Active,
		}
	}
	return out, nil
}

// CreateChart implements [workspace.CatalogWriter].
func (c *Catalog) CreateChart(ctx context.Context, ch workspace.Chart) (workspace.Chart, error) {
	defer c.wrote(ctx)()
	if ch.ID == "" {
		ch.ID = newCatalogID("chart")
	}
	ch.YFields = slices.Clone(ch.YFields)
	r, err := rowOf(ch)
	if err != nil {
		return workspace.Chart{}, err
	}
	if err := insert(ctx, c.db, r, false); err != nil {
		return workspace.Chart{}, err
	}
	return ch, nil
}

// UpdateChart implements [workspace.CatalogWriter], under the chart's row
// lock.
func (c *Catalog) UpdateChart(ctx context.Context, ch workspace.Chart) (workspace.Chart, error) {
	defer c.wrote(ctx)()
	var out workspace.Chart
	err := c.transact(ctx, "pgstore.Catalog.UpdateChart", func(tx *sqlx.Tx) error {
		old, err := get[workspace.Chart](ctx, tx, access.TypeChart, ch.ID, " FOR UPDATE")
		if err != nil {
			return err
		}
		old.Name, old.Type, old.DatasetID, old.XField = ch.Name, ch.Type, ch.DatasetID, ch.XField
		old.YFields, old.UpdatedAt = slices.Clone(ch.YFields), ch.UpdatedAt
		r, err := rowOf(old)
		if err != nil {
			return err
		}
		out = old
		return insert(ctx, tx, r, true)
	})
	return out, err
}

// PlaceChart implements [workspace.CatalogWriter]. The chart row is locked
// and the dashboard row share-locked: a concurrent placement waits and
// then sees a saved chart (Conflict), and a concurrent DeleteDashboard
// either runs first (NotFound here) or waits and deletes the placed chart
// with its dashboard.
func (c *Catalog) PlaceChart(ctx context.Context, chartID, dashboardID string, at time.Time) (workspace.Chart, error) {
	defer c.wrote(ctx)()
	var out workspace.Chart
	err := c.transact(ctx, "pgstore.Catalog.PlaceChart", func(tx *sqlx.Tx) error {
		ch, err := get[workspace.Chart](ctx, tx, access.TypeChart, chartID, " FOR UPDATE")
		if err != nil {
			return err
		}
		d, err := get[workspace.Dashboard](ctx, tx, access.TypeDashboard, dashboardID, " FOR SHARE")
		if err != nil {
			return err
		}
		if ch.Status() != workspace.StatusPreview {
			return askbi.Errorf(askbi.Conflict, "the chart is already on a dashboard")
		}
		ch.DashboardID, ch.ProjectID, ch.UpdatedAt = d.ID, d.ProjectID, at
		r, err := rowOf(ch)
		if err != nil {
			return err
		}
		out = ch
		return insert(ctx, tx, r, true)
	})
	return out, err
}

// CreateDataset implements [workspace.CatalogWriter]. The dataset and its
// request are one row, written by one statement: both or neither.
func (c *Catalog) CreateDataset(ctx context.Context, d workspace.Dataset) (workspace.Dataset, error) {
	defer c.wrote(ctx)()
	if d.ID == "" {
		d.ID = newCatalogID("dataset")
	}
	r, err := rowOf(d)
	if err != nil {
		return workspace.Dataset{}, err
	}
	if err := insert(ctx, c.db, r, false); err != nil {
		return workspace.Dataset{}, err
	}
	return d, nil
}

// DeleteDashboard implements [workspace.CatalogWriter]: the dashboard and its
// charts go in one transaction.
func (c *Catalog) DeleteDashboard(ctx context.Context, id string) error {
	defer c.wrote(ctx)()
	return c.transact(ctx, "pgstore.Catalog.DeleteDashboard", func(tx *sqlx.Tx) error {
		if err := execOne(ctx, tx, "pgstore.Catalog.DeleteDashboard", askbi.Errorf(askbi.NotFound, "dashboard not found"),
			`DELETE FROM catalog_entities WHERE type = 'dashboard' AND id = $1`, id); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM catalog_entities WHERE type = 'chart' AND dashboard_id = $1`, id)
		return err
	})
}

// SaveConnection implements [workspace.ConnectionWriter].
func (c *Catalog) SaveConnection(ctx context.Context, conn workspace.Connection) error {
	defer c.wrote(ctx)()
	r, err := rowOf(conn)
	if err != nil {
		return err
	}
	return insert(ctx, c.db, r, true)
}

// DeleteConnection implements [workspace.ConnectionWriter].
func (c *Catalog) DeleteConnection(ctx context.Context, id string) error {
	defer c.wrote(ctx)()
	if _, err := c.db.ExecContext(ctx, `DELETE FROM catalog_entities WHERE type = 'connection' AND id = $1`, id); err != nil {
		return internal("pgstore.Catalog.DeleteConnection", err)
	}
	return nil
}

// Seed stores s under name once: the first call for a name, in any
// process sharing the database, stores every entity in one transaction
// (leaving any entity that already exists as it is) and reports true;
// later calls change nothing and report false. A concurrent call waits
// for the first to commit.
func (c *Catalog) Seed(ctx context.Context, name string, s CatalogSeed) (bool, error) {
	defer c.wrote(ctx)()
	return seedOnce(ctx, c.db, "pgstore.Catalog.Seed", name, func(tx *sqlx.Tx) error {
		var all []any
		for _, v := range s.Connections {
			all = append(all, v)
		}
		for _, v := range s.Dashboards {
			all = append(all, v)
		}
		for _, v := range s.Datasets {
			all = append(all, v)
		}
		for _, v := range s.Charts {
			all = append(all, v)
		}
		for _, v := range all {
			r, err := rowOf(v)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO catalog_entities (`+catalogColumns+`)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING`,
				r.Type, r.ID, r.TeamID, r.ProjectID, r.Name, r.UpdatedAt, r.DashboardID, r.ConnectionID, r.Doc); err != nil {
				return err
			}
		}
		return nil
	})
}

// seedOnce runs fn in a transaction the first time any process calls it
// with name on the database, and reports whether it ran; a concurrent
// call waits for the first to commit. Names are shared by every kind of
// seed.
func seedOnce(ctx context.Context, db *sqlx.DB, op, name string, fn func(tx *sqlx.Tx) error) (bool, error) {
	var seeded bool
	err := Transact(ctx, db, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO catalog_seeds (name) VALUES ($1) ON CONFLICT DO NOTHING`, name)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		seeded = true
		return fn(tx)
	})
	var ae *askbi.Error
	if err != nil && !errors.As(err, &ae) {
		err = internal(op, err)
	}
	return seeded && err == nil, err
}

// transact runs fn in a transaction; an *askbi.Error from fn passes
// through, any other error is Internal for op.
func (c *Catalog) transact(ctx context.Context, op string, fn func(tx *sqlx.Tx) error) error {
	err := Transact(ctx, c.db, fn)
	var ae *askbi.Error
	if err == nil || errors.As(err, &ae) {
		return err
	}
	return internal(op, err)
}

// newCatalogID returns a random ID "<prefix>_<16 chars>", as
// workspace.MemoryCatalog assigns them.
func newCatalogID(prefix string) string {
	return prefix + "_" + strings.ToLower(rand.Text()[:16])
}
