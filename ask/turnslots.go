package ask

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
)

// The default bounds of the turns running at once: a person rarely has
// more than a couple of chats answering together, and each turn may call
// a paid model up to Options.MaxIterations times.
const (
	DefaultMaxTurnsPerUser = 3
	DefaultMaxTurnsPerTeam = 20
)

// turnRetry is the retry hint of a turn refused at a bound: a turn takes
// seconds.
const turnRetry = 5 * time.Second

// turnSlots bounds the turns running at once per user (in a team) and per
// team: Send, Approve and Reject take a slot for as long as they run the
// model and tools, here and, when shared is set, across instances.
type turnSlots struct {
	perUser, perTeam int
	shared           dataexec.Leases
	ttl              time.Duration // of a shared slot: a turn's deadline and a margin
	log              *slog.Logger
	sharedDown       atomic.Bool

	mu   sync.Mutex
	user map[string]int
	team map[string]int
}

func newTurnSlots(o *Options) *turnSlots {
	return &turnSlots{perUser: o.MaxTurnsPerUser, perTeam: o.MaxTurnsPerTeam, shared: o.TurnSlots,
		ttl: o.TurnTimeout + 30*time.Second, log: o.Logger, user: map[string]int{}, team: map[string]int{}}
}

// acquire takes a slot of live principal p and of its team, or refuses
// RateLimited with a retry hint, at once: a queue would hold the
// caller's connection while the model runs. It takes nothing on an
// error. The caller calls release when the turn ends.
func (s *turnSlots) acquire(ctx context.Context, p access.Principal) (release func(), err error) {
	user, team := p.TeamID+"/"+p.UserID, p.TeamID
	s.mu.Lock()
	switch {
	case s.user[user] >= s.perUser:
		s.mu.Unlock()
		return nil, askbi.Retry(askbi.RateLimited, turnRetry, "you have %d requests running; wait for one to finish, or stop it", s.perUser)
	case s.team[team] >= s.perTeam:
		s.mu.Unlock()
		return nil, askbi.Retry(askbi.RateLimited, turnRetry, "your team has %d requests running; try again in a moment", s.perTeam)
	}
	s.user[user]++
	s.team[team]++
	s.mu.Unlock()
	local := func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.user[user]--; s.user[user] == 0 {
			delete(s.user, user)
		}
		if s.team[team]--; s.team[team] == 0 {
			delete(s.team, team)
		}
	}
	if s.shared == nil {
		return local, nil
	}
	rel, err := s.shared.Acquire(ctx, []dataexec.Slot{{Key: "turns:user:" + user, Max: s.perUser}, {Key: "turns:team:" + team, Max: s.perTeam}}, s.ttl)
	switch {
	case err == nil:
		if s.sharedDown.Swap(false) {
			s.log.Info("ask: the shared turn bounds are back")
		}
		return func() { rel(); local() }, nil
	case askbi.ErrorCode(err) == askbi.RateLimited:
		local()
		return nil, askbi.Retry(askbi.RateLimited, turnRetry, "too many requests are running for you or your team; try again in a moment")
	case ctx.Err() != nil:
		local()
		return nil, askbi.Errorf(askbi.Unavailable, "the request was cancelled")
	}
	// The shared store cannot be reached: the bounds hold per process
	// until it can, rather than refusing every turn.
	if !s.sharedDown.Swap(true) {
		s.log.Warn("ask: the shared turn bounds cannot be reached; bounding turns per process", "err", err)
	}
	return local, nil
}
