package pgstore

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
)

// Directory is an [access.Directory] in PostgreSQL: the reference server's
// stand-in for a host's team membership. Every Member read goes to the
// database, so a role change or a removal made by any process takes
// effect on every instance at the next request.
//
// While the database cannot be reached, Member answers with this value's
// last successful read of that member when it is at most [StaleFor] old,
// as the Catalog does, so a client whose key is cached keeps being served
// through a short outage. SetMember and RemoveMember tell every instance
// to forget its last read of the member (Listen, then Forget), so a
// removed member is never served from one. It is safe for concurrent use.
type Directory struct {
	db *sqlx.DB
	// followed is set while change notifications reach this value (see
	// Follow).
	followed atomic.Bool

	mu   sync.Mutex
	gen  uint64
	last map[[2]string]lastMember
}

type lastMember struct {
	m  access.Membership
	at time.Time
}

// NewDirectory returns a Directory on a migrated database.
func NewDirectory(db *sqlx.DB) *Directory {
	return &Directory{db: db, last: map[[2]string]lastMember{}}
}

// Follow says whether the member changes of every instance reach this
// value as change notifications (Listen with [ForgetCaches], which
// DB.Listen sets up). While they do, Member answers from this value's
// last read of that member when it is at most [StaleFor] old, with no
// round trip: a change anywhere forgets it within a moment, one through
// this value at once, and a lost listening connection forgets every
// member on the reconnect. Off (the default), every read goes to the
// database.
func (d *Directory) Follow(on bool) { d.followed.Store(on) }

// Forget drops the last reads of every member: another instance changed
// the directory (a "member" Change), or changes may have been missed.
func (d *Directory) Forget() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.gen++
	clear(d.last)
}

var _ access.Directory = (*Directory)(nil)

// Member implements [access.Directory].
func (d *Directory) Member(ctx context.Context, teamID, userID string) (access.Membership, error) {
	key := [2]string{teamID, userID}
	d.mu.Lock()
	gen := d.gen
	l, kept := d.last[key]
	d.mu.Unlock()
	if kept && d.followed.Load() && time.Since(l.at) <= StaleFor {
		return l.m, nil
	}
	m, err := d.member(ctx, teamID, userID)
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case err == nil && gen == d.gen:
		if len(d.last) >= maxLastReads {
			clear(d.last)
		}
		d.last[key] = lastMember{m: m, at: time.Now()}
	case askbi.ErrorCode(err) == askbi.NotFound:
		delete(d.last, key)
	case askbi.ErrorCode(err) == askbi.Unavailable && ctx.Err() == nil:
		if l, ok := d.last[key]; ok && time.Since(l.at) <= StaleFor {
			return l.m, nil
		}
	}
	return m, err
}

func (d *Directory) member(ctx context.Context, teamID, userID string) (access.Membership, error) {
	var row struct {
		Role        string         `db:"role"`
		AllProjects bool           `db:"all_projects"`
		ProjectIDs  pq.StringArray `db:"project_ids"`
	}
	err := d.db.GetContext(ctx, &row, `SELECT role, all_projects, project_ids FROM team_members WHERE team_id = $1 AND user_id = $2`,
		teamID, userID)
	if errors.Is(err, sql.ErrNoRows) {
		return access.Membership{}, askbi.Errorf(askbi.NotFound, "not a member of this team")
	}
	if err != nil {
		return access.Membership{}, internal("pgstore.Directory.Member", err)
	}
	m := access.Membership{Role: access.Role(row.Role), Projects: access.ProjectSet(row.ProjectIDs...)}
	if row.AllProjects {
		m.Projects = access.AllProjects()
	}
	return m, nil
}

// HasProject implements [access.Directory].
func (d *Directory) HasProject(ctx context.Context, teamID, projectID string) (bool, error) {
	var ok bool
	if err := d.db.GetContext(ctx, &ok, `SELECT EXISTS (SELECT 1 FROM team_projects WHERE team_id = $1 AND project_id = $2)`,
		teamID, projectID); err != nil {
		return false, internal("pgstore.Directory.HasProject", err)
	}
	return ok, nil
}

// SetMember adds a member or changes their role and projects.
func (d *Directory) SetMember(ctx context.Context, teamID, userID string, role access.Role, projects access.Projects) error {
	d.Forget()
	defer d.Forget()
	if _, err := d.db.ExecContext(ctx, `WITH m AS (INSERT INTO team_members (team_id, user_id, role, all_projects, project_ids)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT (team_id, user_id) DO UPDATE SET role = $3, all_projects = $4, project_ids = $5
		RETURNING 1) SELECT pg_notify('`+ChangesChannel+`', 'member') FROM m`,
		teamID, userID, string(role), projects.All, projectIDs(projects)); err != nil {
		return internal("pgstore.Directory.SetMember", err)
	}
	return nil
}

// RemoveMember removes a member; their sessions, keys and grants stop
// working on every instance.
func (d *Directory) RemoveMember(ctx context.Context, teamID, userID string) error {
	d.Forget()
	defer d.Forget()
	if _, err := d.db.ExecContext(ctx, `WITH m AS (DELETE FROM team_members WHERE team_id = $1 AND user_id = $2 RETURNING 1)
		SELECT pg_notify('`+ChangesChannel+`', 'member') FROM m`, teamID, userID); err != nil {
		return internal("pgstore.Directory.RemoveMember", err)
	}
	return nil
}

// DirectorySeed is a set of projects and members Seed stores once.
type DirectorySeed struct {
	Projects [][2]string // {team, project}
	Members  []SeedMember
}

// SeedMember is one member of a [DirectorySeed].
type SeedMember struct {
	Team, User string
	Role       access.Role
	Projects   access.Projects
}

// Seed stores s under name once (see [Catalog.Seed]): later calls, in any
// process, change nothing, so a role changed or a member removed since
// stays as it is.
func (d *Directory) Seed(ctx context.Context, name string, s DirectorySeed) (bool, error) {
	return seedOnce(ctx, d.db, "pgstore.Directory.Seed", "directory:"+name, func(tx *sqlx.Tx) error {
		for _, p := range s.Projects {
			if _, err := tx.ExecContext(ctx, `INSERT INTO team_projects (team_id, project_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
				p[0], p[1]); err != nil {
				return err
			}
		}
		for _, m := range s.Members {
			if _, err := tx.ExecContext(ctx, `INSERT INTO team_members (team_id, user_id, role, all_projects, project_ids)
				VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`,
				m.Team, m.User, string(m.Role), m.Projects.All, projectIDs(m.Projects)); err != nil {
				return err
			}
		}
		return nil
	})
}

// projectIDs is p's IDs as a column value: never NULL.
func projectIDs(p access.Projects) pq.StringArray {
	return append(pq.StringArray{}, p.IDs...)
}
