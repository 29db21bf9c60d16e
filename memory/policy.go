package memory

import (
	"context"

	"github.com/askbi/askbi"
)

// Policy is the host's external-AI setting ("allow feedback and memory with
// external AI"). [Service.ForModel] asks it on every call, so a change takes
// effect on the next turn. Implementations must be safe for concurrent use.
type Policy interface {
	// AllowExternalAI reports whether the memories of team members may be
	// sent to an external model. Any error makes ForModel fail, and the
	// caller then sends no memory.
	AllowExternalAI(ctx context.Context, teamID string) (bool, error)
}

// StaticPolicy is a Policy giving the same answer for every team. It is
// immutable and safe for concurrent use.
type StaticPolicy bool

// AllowExternalAI implements Policy.
func (p StaticPolicy) AllowExternalAI(context.Context, string) (bool, error) { return bool(p), nil }

// ParsePolicy is the policy a host's configuration names: "allow" or
// "deny" memories with external AI. Another name is InvalidArgument.
func ParsePolicy(name string) (StaticPolicy, error) {
	switch name {
	case "allow":
		return true, nil
	case "deny":
		return false, nil
	}
	return false, askbi.Errorf(askbi.InvalidArgument, "must be allow or deny")
}
