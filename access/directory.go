package access

import (
	"context"
	"slices"
	"sync"

	"github.com/askbi/askbi"
)

// Membership is a user's live standing in one team.
type Membership struct {
	Role Role
	// Projects the member may access. Owners and admins always have every
	// project, whatever is stored here.
	Projects Projects
}

// Directory is the host's source of truth for team membership. It is
// consulted on every access decision, so a removed or downgraded member
// loses access at once. Implementations must be safe for concurrent use.
type Directory interface {
	// Member returns the user's membership in team. It returns NotFound when
	// the user is not a member or the team does not exist.
	Member(ctx context.Context, teamID, userID string) (Membership, error)
	// HasProject reports whether project belongs to team. It returns false,
	// not an error, for an unknown project or team.
	HasProject(ctx context.Context, teamID, projectID string) (bool, error)
}

// MemoryDirectory is an in-memory Directory, for tests and the embedded
// default. The zero value is not usable; call [NewMemoryDirectory].
type MemoryDirectory struct {
	mu       sync.RWMutex
	members  map[[2]string]Membership // {team, user}
	projects map[string][]string      // team → project IDs
}

// NewMemoryDirectory returns an empty directory.
func NewMemoryDirectory() *MemoryDirectory {
	return &MemoryDirectory{members: map[[2]string]Membership{}, projects: map[string][]string{}}
}

// AddProject records that project belongs to team.
func (d *MemoryDirectory) AddProject(teamID, projectID string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !slices.Contains(d.projects[teamID], projectID) {
		d.projects[teamID] = append(d.projects[teamID], projectID)
	}
}

// SetMember adds or updates a member.
func (d *MemoryDirectory) SetMember(teamID, userID string, role Role, projects Projects) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.members[[2]string{teamID, userID}] = Membership{Role: role, Projects: projects}
}

// RemoveMember removes a member; their sessions and keys stop working.
func (d *MemoryDirectory) RemoveMember(teamID, userID string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.members, [2]string{teamID, userID})
}

// Member implements Directory.
func (d *MemoryDirectory) Member(_ context.Context, teamID, userID string) (Membership, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	m, ok := d.members[[2]string{teamID, userID}]
	if !ok {
		return Membership{}, askbi.Errorf(askbi.NotFound, "not a member of this team")
	}
	return m, nil
}

// HasProject implements Directory.
func (d *MemoryDirectory) HasProject(_ context.Context, teamID, projectID string) (bool, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return slices.Contains(d.projects[teamID], projectID), nil
}
