package access

import (
	"slices"
	"strings"

	"github.com/askbi/askbi"
)

// Roles are the four roles, the most powerful first.
var Roles = []Role{RoleOwner, RoleAdmin, RoleEditor, RoleViewer}

// KeepRight returns the CheckerOptions.Withdraw that leaves right to the
// roles named in list (comma-separated, e.g. "owner,admin") and
// withdraws it from every other role: a host's setting of who may use
// the assistant. An empty list withdraws nothing (nil); a name that is
// not a role is InvalidArgument.
func KeepRight(right Right, list string) (map[Right][]Role, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	var keep []Role
	for name := range strings.SplitSeq(list, ",") {
		role := Role(strings.TrimSpace(name))
		if !role.Valid() {
			return nil, askbi.Errorf(askbi.InvalidArgument, "%q is not a role: roles are owner, admin, editor and viewer", name)
		}
		keep = append(keep, role)
	}
	var withdrawn []Role
	for _, role := range Roles {
		if !slices.Contains(keep, role) {
			withdrawn = append(withdrawn, role)
		}
	}
	return map[Right][]Role{right: withdrawn}, nil
}
