package usage

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/telemetry"
)

// DefaultMaxRange is Options.MaxRange's default.
const DefaultMaxRange = 92 * 24 * time.Hour

// MaxBudgetTokens is the largest budget SetBudget takes.
const MaxBudgetTokens = 1 << 40

// Audit actions the Service records.
const (
	ActionBudgetSet    = "usage.budget_set"
	ActionBudgetDelete = "usage.budget_delete"
)

// Options configures a Service. The zero value is valid; each zero field
// means its default.
type Options struct {
	// Prices turn tokens into estimated cost, by model. Default none:
	// every cost reads 0 and models show unpriced.
	Prices Prices
	// MaxRange bounds a report's period. Default DefaultMaxRange (92
	// days).
	MaxRange time.Duration
	// TeamName names a team in a refusal's message ("Acme's daily token
	// budget"; default "This team's") and in a report (Report.TeamName;
	// default none).
	TeamName func(ctx context.Context, teamID string) string
	// Members, when set, is read to refuse a budget for a user who is
	// not a member of the team (a mistyped user ID would otherwise set a
	// budget that limits nobody). Default none: any user ID is taken.
	Members access.Directory
	// Audit records budget changes. Default none.
	Audit access.AuditSink
	// Telemetry counts the estimated cost of model calls by team and
	// model (askbi.chat.cost.usd). Default none.
	Telemetry *telemetry.Telemetry
	// Logger logs what the Service cannot record. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Service is the usage view and the token budgets over a [Ledger] and a
// [Budgets] store: the reads and changes people make pass the request
// gate and the access rights (Report, Budgets, SetBudget, DeleteBudget),
// and Ask calls Check before a turn's model calls and Charge after each.
// It is safe for concurrent use.
type Service struct {
	ledger  Ledger
	budgets Budgets
	gate    *access.Gate
	audit   *access.Auditor
	o       Options
}

// NewService returns the Service over ledger and budgets (often one
// store), whose people's requests pass gate. opts may be nil.
func NewService(ledger Ledger, budgets Budgets, gate *access.Gate, opts *Options) *Service {
	s := &Service{ledger: ledger, budgets: budgets, gate: gate}
	if opts != nil {
		s.o = *opts
	}
	if s.o.MaxRange <= 0 {
		s.o.MaxRange = DefaultMaxRange
	}
	if s.o.Logger == nil {
		s.o.Logger = slog.Default()
	}
	if s.o.Now == nil {
		s.o.Now = time.Now
	}
	s.audit = access.NewAuditor(s.o.Audit, s.o.Logger, s.o.Now)
	return s
}

// Ledger is the service's ledger, for a host that records audit entries
// on it ([access.TeeAudit]).
func (s *Service) Ledger() Ledger { return s.ledger }

// begin passes p through the gate and checks right on its team.
func (s *Service) begin(ctx context.Context, p access.Principal, right access.Right) (access.Principal, error) {
	live, err := s.gate.Begin(ctx, p)
	if err != nil {
		return access.Principal{}, err
	}
	if err := access.Allow(live, right, access.Team(live.TeamID)); err != nil {
		return access.Principal{}, err
	}
	return live, nil
}

// seesTeam reports whether live p sees every member's usage.
func seesTeam(p access.Principal) bool {
	return access.Allow(p, access.RightViewTeamUsage, access.Team(p.TeamID)) == nil
}

// Report is the usage view of p's team over [from, to): for an owner or
// admin the whole team's, for any other member their own alone
// (Report.UserID set). Models are marked Priced by Options.Prices and
// the team named by Options.TeamName. It needs [access.RightViewUsage].
// Errors: InvalidArgument (to not after from, a period longer than
// Options.MaxRange), the gate's, Forbidden, and the ledger's Unavailable.
func (s *Service) Report(ctx context.Context, p access.Principal, from, to time.Time) (_ Report, err error) {
	defer askbi.Wrap(&err, "usage.Service.Report")
	switch {
	case !to.After(from):
		return Report{}, askbi.Errorf(askbi.InvalidArgument, "to: must be after from")
	case to.Sub(from) > s.o.MaxRange:
		return Report{}, askbi.Errorf(askbi.InvalidArgument, "to: a period of at most %d days", int(s.o.MaxRange/(24*time.Hour)))
	}
	live, err := s.begin(ctx, p, access.RightViewUsage)
	if err != nil {
		return Report{}, err
	}
	q := Query{From: from.UTC(), To: to.UTC()}
	if !seesTeam(live) {
		q.UserID = live.UserID // a member sees their own row only
	}
	r, err := s.ledger.Report(ctx, live.TeamID, q)
	if err != nil {
		return Report{}, err
	}
	for i, m := range r.Models {
		_, r.Models[i].Priced = s.o.Prices[m.Model]
	}
	if s.o.TeamName != nil {
		r.TeamName = s.o.TeamName(ctx, live.TeamID)
	}
	// Lists answer [] rather than null in JSON.
	r.Users, r.Tools, r.Models = nonNil(r.Users), nonNil(r.Tools), nonNil(r.Models)
	r.Clients, r.Connections = nonNil(r.Clients), nonNil(r.Connections)
	return r, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// BudgetStatus is a budget and where it stands now.
type BudgetStatus struct {
	Budget
	// Used is the period's Tokens.Total so far.
	Used int64 `json:"used"`
	// ResetsAt is when the period ends and Used starts again from 0.
	ResetsAt time.Time `json:"resets_at"`
	// Exceeded says a new turn is refused now.
	Exceeded bool `json:"exceeded"`
}

// Budgets are the budgets that apply to p and where they stand: for an
// owner or admin every budget of the team, for any other member the
// team's and their own. It needs [access.RightViewUsage].
func (s *Service) Budgets(ctx context.Context, p access.Principal) (_ []BudgetStatus, err error) {
	defer askbi.Wrap(&err, "usage.Service.Budgets")
	live, err := s.begin(ctx, p, access.RightViewUsage)
	if err != nil {
		return nil, err
	}
	all, err := s.budgets.TeamBudgets(ctx, live.TeamID)
	if err != nil {
		return nil, err
	}
	team := seesTeam(live)
	out := []BudgetStatus{}
	for _, b := range all {
		if !team && b.UserID != "" && b.UserID != live.UserID {
			continue
		}
		st, err := s.status(ctx, b)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// status is where b stands now.
func (s *Service) status(ctx context.Context, b Budget) (BudgetStatus, error) {
	now := s.o.Now()
	used, err := s.ledger.Spent(ctx, b.TeamID, b.UserID, b.Period.Start(now))
	if err != nil {
		return BudgetStatus{}, err
	}
	return BudgetStatus{Budget: b, Used: used, ResetsAt: b.Period.Next(now), Exceeded: used >= b.Tokens}, nil
}

// BudgetChange is a budget an owner or admin sets.
type BudgetChange struct {
	// UserID is the member the budget is for; "" for the whole team.
	UserID string `json:"user_id" validate:"max=128"`
	Period Period `json:"period" validate:"required,oneof=day month"`
	Tokens int64  `json:"tokens" validate:"gt=0"`
}

// SetBudget sets the budget of p's team (or of one of its members) for
// a period, recorded as set by p now; it replaces one of the same user
// and period. It needs [access.RightSetBudgets] (owners and admins).
// Errors: InvalidArgument (also a user who is not a member, with
// Options.Members), the gate's, Forbidden, the store's.
func (s *Service) SetBudget(ctx context.Context, p access.Principal, c BudgetChange) (_ BudgetStatus, err error) {
	defer askbi.Wrap(&err, "usage.Service.SetBudget")
	switch {
	case !c.Period.Valid():
		return BudgetStatus{}, askbi.Errorf(askbi.InvalidArgument, "period: must be day or month")
	case c.Tokens <= 0 || c.Tokens > MaxBudgetTokens:
		return BudgetStatus{}, askbi.Errorf(askbi.InvalidArgument, "tokens: must be between 1 and %d", int64(MaxBudgetTokens))
	case utf8.RuneCountInString(c.UserID) > 128 || strings.TrimSpace(c.UserID) != c.UserID:
		return BudgetStatus{}, askbi.Errorf(askbi.InvalidArgument, "user_id: at most 128 characters, without surrounding spaces")
	}
	live, err := s.begin(ctx, p, access.RightSetBudgets)
	if err != nil {
		return BudgetStatus{}, err
	}
	if c.UserID != "" && s.o.Members != nil {
		_, err := s.o.Members.Member(ctx, live.TeamID, c.UserID)
		switch {
		case askbi.ErrorCode(err) == askbi.NotFound:
			return BudgetStatus{}, askbi.Errorf(askbi.InvalidArgument, "user_id: %s is not a member of this team", c.UserID)
		case err != nil:
			return BudgetStatus{}, err
		}
	}
	b := Budget{TeamID: live.TeamID, UserID: c.UserID, Period: c.Period, Tokens: c.Tokens, SetBy: live.UserID, SetAt: s.o.Now().UTC().Truncate(time.Microsecond)}
	target := access.Team(live.TeamID)
	defer s.audit.Track(ctx, live, ActionBudgetSet, &target, budgetDetails(c.UserID, c.Period))(&err)
	if err := s.budgets.SetBudget(ctx, b); err != nil {
		return BudgetStatus{}, err
	}
	return s.status(ctx, b)
}

// DeleteBudget removes the budget of p's team (userID "") or of one of
// its members for period. It needs [access.RightSetBudgets]. Errors:
// NotFound when there is none, the gate's, Forbidden.
func (s *Service) DeleteBudget(ctx context.Context, p access.Principal, userID string, period Period) (err error) {
	defer askbi.Wrap(&err, "usage.Service.DeleteBudget")
	if !period.Valid() {
		return askbi.Errorf(askbi.InvalidArgument, "period: must be day or month")
	}
	live, err := s.begin(ctx, p, access.RightSetBudgets)
	if err != nil {
		return err
	}
	target := access.Team(live.TeamID)
	defer s.audit.Track(ctx, live, ActionBudgetDelete, &target, budgetDetails(userID, period))(&err)
	return s.budgets.DeleteBudget(ctx, live.TeamID, userID, period)
}

func budgetDetails(userID string, period Period) map[string]string {
	d := map[string]string{"period": string(period), "scope": "team"}
	if userID != "" {
		d["scope"], d["user_id"] = "user", userID
	}
	return d
}

// Check refuses a turn of live principal p that would start past a
// budget of its team or of p: BudgetExceeded, with a message that says
// which budget, who set it and when it resets. Ask calls it before a
// turn's first model call; a turn that passed it runs to its end. With
// no budget set it costs one read of the team's budgets.
//
// Several instances share a budget through the ledger: each reads the
// period's sum when a turn starts, and each model call is charged when
// it returns. A budget is therefore overshot by at most the tokens of
// the turns that passed Check before the charge that crossed it was
// written (the turns of the team running at once, at most
// ask.Options.MaxTurnsPerTeam across instances, each up to
// ask.Options.MaxIterations model calls). If the ledger cannot be read
// the turn is refused Unavailable: a budget is never silently skipped.
func (s *Service) Check(ctx context.Context, p access.Principal) (err error) {
	defer askbi.Wrap(&err, "usage.Service.Check")
	all, err := s.budgets.TeamBudgets(ctx, p.TeamID)
	if err != nil {
		return err
	}
	for _, b := range all {
		if b.UserID != "" && b.UserID != p.UserID {
			continue
		}
		st, err := s.status(ctx, b)
		if err != nil {
			return err
		}
		if st.Exceeded {
			return askbi.Errorf(askbi.BudgetExceeded, "%s", s.refusal(ctx, st))
		}
	}
	return nil
}

// refusal is the message of a turn refused by st: whose budget, how
// large, who set it, when it resets, and who can change it.
func (s *Service) refusal(ctx context.Context, st BudgetStatus) string {
	whose := "Your"
	if st.UserID == "" {
		whose = "This team's"
		if s.o.TeamName != nil {
			if name := s.o.TeamName(ctx, st.TeamID); name != "" {
				whose = name + "'s"
			}
		}
	}
	period := "daily"
	if st.Period == Month {
		period = "monthly"
	}
	return fmt.Sprintf("%s %s token budget of %s tokens is used up (%s used). It was set by %s on %s and resets at %s UTC on %s. A team owner or admin can raise it.",
		whose, period, thousands(st.Tokens), thousands(st.Used), st.SetBy, st.SetAt.UTC().Format("2 Jan 2006"),
		st.ResetsAt.UTC().Format("15:04"), st.ResetsAt.UTC().Format("2 Jan 2006"))
}

// thousands writes n with comma separators: 100,000.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// ModelCall is one model call as Ask reports it to Charge.
type ModelCall struct {
	Provider, Model string
	Tokens          Tokens
}

// Charge records the tokens of one model call of live principal p, and
// their estimated cost at Options.Prices. A call that reported no tokens
// records nothing. It records with a context that is never cancelled, so
// a stopped turn's tokens still count. Errors: the ledger's (Ask logs
// them: a turn does not fail for its record).
func (s *Service) Charge(ctx context.Context, p access.Principal, m ModelCall) (err error) {
	defer askbi.Wrap(&err, "usage.Service.Charge")
	if m.Tokens == (Tokens{}) {
		return nil
	}
	var micros int64
	price, priced := s.o.Prices[m.Model]
	if priced {
		micros = int64(price.Cost(m.Tokens)*1e6 + 0.5)
	}
	c := Charge{Time: s.o.Now().UTC().Truncate(time.Microsecond), TeamID: p.TeamID, UserID: p.UserID, Provider: m.Provider, Model: m.Model,
		Tokens: m.Tokens, CostMicros: micros}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := s.ledger.Charge(ctx, c); err != nil {
		return err
	}
	s.o.Telemetry.Cost(ctx, p.TeamID, m.Provider, m.Model, CostUSD(micros))
	return nil
}
