package pgstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
)

// Directory is an access.Directory in PostgreSQL: the reference server's
// stand-in for a host's team membership. Every Member read goes to the
// database, so a role change or a removal made by any process takes
// effect on every instance at the next request. It is safe for
// concurrent use.
type Directory struct {
	db *sqlx.DB
}

// NewDirectory returns a Directory on a migrated database.
func NewDirectory(db *sqlx.DB) *Directory { return &Directory{db: db} }

var _ access.Directory = (*Directory)(nil)

// Member implements access.Directory.
func (d *Directory) Member(ctx context.Context, teamID, userID string) (access.Membership, error) {
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

// HasProject implements access.Directory.
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
	if _, err := d.db.ExecContext(ctx, `INSERT INTO team_members (team_id, user_id, role, all_projects, project_ids) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (team_id, user_id) DO UPDATE SET role = $3, all_projects = $4, project_ids = $5`,
		teamID, userID, string(role), projects.All, projectIDs(projects)); err != nil {
		return internal("pgstore.Directory.SetMember", err)
	}
	return nil
}

// RemoveMember removes a member; their sessions, keys and grants stop
// working on every instance.
func (d *Directory) RemoveMember(ctx context.Context, teamID, userID string) error {
	if _, err := d.db.ExecContext(ctx, `DELETE FROM team_members WHERE team_id = $1 AND user_id = $2`, teamID, userID); err != nil {
		return internal("pgstore.Directory.RemoveMember", err)
	}
	return nil
}

// DirectorySeed is a set of projects and members Seed stores once.
type DirectorySeed struct {
	Projects [][2]string // {team, project}
	Members  []SeedMember
}

// SeedMember is one member of a DirectorySeed.
type SeedMember struct {
	Team, User string
	Role       access.Role
	Projects   access.Projects
}

// Seed stores s under name once (see Catalog.Seed): later calls, in any
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
