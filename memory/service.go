package memory

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
)

// Item is one memory as its owner sees it.
type Item struct {
	ID        string    `json:"id"`
	Text      string    `json:"text"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Audit actions (access.AuditEntry.Action), one per kind of change. The
// entries never hold memory text.
const (
	ActionAdd       = "memory.add"
	ActionEdit      = "memory.edit"
	ActionDelete    = "memory.delete"
	ActionDeleteAll = "memory.delete_all"
)

// Options configures a Service. The zero value is valid.
type Options struct {
	// Limits caps each owner's memories; a zero field takes its default
	// (500 characters each, 50 memories, 8,000 characters in total).
	Limits Limits
	// Policy decides whether ForModel may return memories. Default: never,
	// so a host must opt in to sending memory to an external model.
	Policy Policy
	// Audit records every attempted change (add, edit, delete, delete
	// all), successful or not, as an entry whose target is the memory
	// (access.TypeMemory; no ID for delete all and a failed add). Default
	// none.
	Audit access.AuditSink
	// Logger logs audit failures. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Service is explicit, personal, encrypted memory: each user keeps their
// own memories inside each team, lists, adds, edits and deletes them, and
// Ask reads them for the model only when the team's Policy allows it.
//
// Every method takes the calling principal and works only on the memories of
// that user in that team; another user's or another team's memory ID
// answers NotFound, just as an unknown one. Each call passes the request
// gate ([access.Gate.Begin]: live membership, then the rate limit; a
// principal that is already live passes uncharged), so a removed member
// is Forbidden. Memory is managed in the product only
// ([access.RightManageMemory]): a principal authenticated by API key or
// OAuth token (the MCP server) is Forbidden, and ForModel gives it no
// memories.
//
// Text is validated and measured by the Service (see Add), sealed with
// AES-256-GCM under the Keyring's current key, and bound to its owner and
// ID; the Store only ever holds ciphertext. The count and total limits are
// checked by the Store under a per-owner lock, so they hold under
// concurrent requests from any number of processes. Nothing is saved when
// a call fails.
//
// Memory is untrusted user data. It is context about the user for the
// model, never instructions: it must not select a team, widen access,
// approve a tool call or change system rules, and a caller that sends it to
// a model must place it in the untrusted user context, outside system
// instructions and outside stored model context.
//
// A Service is safe for concurrent use.
type Service struct {
	store  Store
	keys   Keyring
	gate   *access.Gate
	limits Limits
	policy Policy
	audit  *access.Auditor
	now    func() time.Time
}

// NewService returns a Service keeping memories in store, sealed with keys,
// for principals that pass gate. opts may be nil.
func NewService(store Store, keys Keyring, gate *access.Gate, opts *Options) *Service {
	var o Options
	if opts != nil {
		o = *opts
	}
	s := &Service{store: store, keys: keys, gate: gate, limits: o.Limits.withDefaults(),
		policy: o.Policy, now: o.Now}
	if s.policy == nil {
		s.policy = StaticPolicy(false)
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.audit = access.NewAuditor(o.Audit, o.Logger, s.now)
	return s
}

// List returns the caller's memories in this team, oldest created first.
// It returns Unauthenticated, Forbidden (not a member, or a token
// principal), or Internal (including a memory that fails to decrypt).
func (s *Service) List(ctx context.Context, p access.Principal) (_ []Item, err error) {
	defer askbi.Wrap(&err, "memory.Service.List")
	o, err := s.owner(ctx, p)
	if err != nil {
		return nil, err
	}
	return s.list(ctx, o)
}

// Add saves a new memory for the caller and returns it. The text is
// normalized first: line breaks become "\n" and surrounding whitespace is
// trimmed; its length is then counted in Unicode characters.
//
// It returns InvalidArgument, saving nothing, for text that is not valid
// UTF-8, is empty after trimming, holds a control character other than
// newline and tab, or is longer than Limits.MaxChars; TooLarge when the
// caller already has Limits.MaxItems memories or the total would pass
// Limits.MaxTotalChars; Unauthenticated or Forbidden for the principal; and
// Internal.
func (s *Service) Add(ctx context.Context, p access.Principal, text string) (item Item, err error) {
	target := access.Entity{Type: access.TypeMemory, TeamID: p.TeamID}
	defer s.audit.Track(ctx, p, ActionAdd, &target, nil)(&err)
	defer askbi.Wrap(&err, "memory.Service.Add")
	now := s.timestamp()
	o, row, text, err := s.prepare(ctx, p, Sealed{ID: newID(), CreatedAt: now, UpdatedAt: now}, text)
	if err != nil {
		return Item{}, err
	}
	if err := s.store.Add(ctx, o, row, s.limits); err != nil {
		return Item{}, err
	}
	target.ID = row.ID
	return Item{ID: row.ID, Text: text, CreatedAt: row.CreatedAt, UpdatedAt: row.UpdatedAt}, nil
}

// Edit replaces the text of the caller's memory id, resealing it under the
// keyring's current key, and returns it. The text is normalized and checked
// as in Add. It returns NotFound for an unknown id or one that is not the
// caller's in this team; TooLarge when the longer text would pass
// Limits.MaxTotalChars; InvalidArgument, Unauthenticated, Forbidden and
// Internal as Add. Nothing changes on error.
func (s *Service) Edit(ctx context.Context, p access.Principal, id, text string) (item Item, err error) {
	target := access.Entity{Type: access.TypeMemory, ID: id, TeamID: p.TeamID}
	defer s.audit.Track(ctx, p, ActionEdit, &target, nil)(&err)
	defer askbi.Wrap(&err, "memory.Service.Edit")
	o, row, text, err := s.prepare(ctx, p, Sealed{ID: id, UpdatedAt: s.timestamp()}, text)
	if err != nil {
		return Item{}, err
	}
	stored, err := s.store.Update(ctx, o, row, s.limits)
	if err != nil {
		return Item{}, err
	}
	return Item{ID: stored.ID, Text: text, CreatedAt: stored.CreatedAt, UpdatedAt: stored.UpdatedAt}, nil
}

// prepare resolves the owner, normalizes text and seals it into row: what
// Add and Edit do before they store.
func (s *Service) prepare(ctx context.Context, p access.Principal, row Sealed, text string) (Owner, Sealed, string, error) {
	o, err := s.owner(ctx, p)
	if err != nil {
		return Owner{}, Sealed{}, "", err
	}
	text, chars, err := s.normalize(text)
	if err != nil {
		return Owner{}, Sealed{}, "", err
	}
	if err := sealText(s.keys, o, &row, text, chars); err != nil {
		return Owner{}, Sealed{}, "", sealError(err)
	}
	return o, row, text, nil
}

// Delete removes the caller's memory id. It returns NotFound for an unknown
// id or one that is not the caller's in this team, Unauthenticated,
// Forbidden and Internal.
func (s *Service) Delete(ctx context.Context, p access.Principal, id string) (err error) {
	target := access.Entity{Type: access.TypeMemory, ID: id, TeamID: p.TeamID}
	defer s.audit.Track(ctx, p, ActionDelete, &target, nil)(&err)
	defer askbi.Wrap(&err, "memory.Service.Delete")
	o, err := s.owner(ctx, p)
	if err != nil {
		return err
	}
	return s.store.Delete(ctx, o, id)
}

// DeleteAll removes every memory of the caller in this team, and no one
// else's, and returns how many it removed. It returns Unauthenticated,
// Forbidden and Internal.
func (s *Service) DeleteAll(ctx context.Context, p access.Principal) (n int, err error) {
	target := access.Entity{Type: access.TypeMemory, TeamID: p.TeamID}
	defer s.audit.Track(ctx, p, ActionDeleteAll, &target, nil)(&err)
	defer askbi.Wrap(&err, "memory.Service.DeleteAll")
	o, err := s.owner(ctx, p)
	if err != nil {
		return 0, err
	}
	return s.store.DeleteAll(ctx, o)
}

// ForModel returns the texts of the caller's memories for one model
// request, oldest first, or nil when the team's Policy does not allow
// external AI, the caller has none, or the principal is a token principal.
// It reads the policy and the memories afresh on every call, so edits,
// deletions and policy changes apply to the next turn. The texts are
// untrusted user data (see Service). It returns Unauthenticated, Forbidden
// (not a member), the Policy's error (Internal unless it is an
// *[askbi.Error]), and Internal; on any error the caller must send no memory.
func (s *Service) ForModel(ctx context.Context, p access.Principal) (_ []string, err error) {
	defer askbi.Wrap(&err, "memory.Service.ForModel")
	if isToken(p) {
		return nil, nil
	}
	o, err := s.owner(ctx, p)
	if err != nil {
		return nil, err
	}
	allow, err := s.policy.AllowExternalAI(ctx, o.TeamID)
	if err != nil || !allow {
		return nil, err
	}
	items, err := s.list(ctx, o)
	if err != nil {
		return nil, err
	}
	var texts []string
	for _, it := range items {
		texts = append(texts, it.Text)
	}
	return texts, nil
}

func (s *Service) list(ctx context.Context, o Owner) ([]Item, error) {
	rows, err := s.store.List(ctx, o)
	if err != nil {
		return nil, err
	}
	items := make([]Item, 0, len(rows))
	for _, r := range rows {
		text, err := open(s.keys, o, r)
		if err != nil {
			return nil, &askbi.Error{Code: askbi.Internal, Message: "a saved memory could not be read",
				Err: fmt.Errorf("open memory %s of %s/%s under key %q: %w", r.ID, o.TeamID, o.UserID, r.KeyID, err)}
		}
		items = append(items, Item{ID: r.ID, Text: text, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt})
	}
	return items, nil
}

// owner resolves p to the owner whose memories it may manage.
func (s *Service) owner(ctx context.Context, p access.Principal) (Owner, error) {
	live, err := s.gate.Begin(ctx, p)
	if err != nil {
		return Owner{}, err
	}
	if err := access.Allow(live, access.RightManageMemory, access.Team(live.TeamID)); err != nil {
		return Owner{}, err
	}
	return Owner{TeamID: live.TeamID, UserID: live.UserID}, nil
}

// isToken reports whether p came from an API key or OAuth token; ForModel
// answers those with nothing rather than an error.
func isToken(p access.Principal) bool {
	return p.Auth == access.AuthAPIKey || p.Auth == access.AuthOAuth
}

// normalize validates text and returns it normalized, with its length in
// characters.
func (s *Service) normalize(text string) (string, int, error) {
	if !utf8.ValidString(text) {
		return "", 0, askbi.Errorf(askbi.InvalidArgument, "text: must be valid UTF-8")
	}
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.TrimSpace(strings.ReplaceAll(text, "\r", "\n"))
	if text == "" {
		return "", 0, askbi.Errorf(askbi.InvalidArgument, "text: a memory cannot be empty")
	}
	chars := 0
	for _, r := range text {
		if unicode.IsControl(r) && r != '\n' && r != '\t' {
			return "", 0, askbi.Errorf(askbi.InvalidArgument, "text: control characters other than newline and tab are not allowed")
		}
		chars++
	}
	if chars > s.limits.MaxChars {
		return "", 0, askbi.Errorf(askbi.InvalidArgument, "text: a memory can be at most %s characters; this one has %s",
			thousands(s.limits.MaxChars), thousands(chars))
	}
	return text, chars, nil
}

// timestamp is now in UTC at the microsecond precision SQL stores keep.
func (s *Service) timestamp() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

func sealError(err error) error {
	return &askbi.Error{Code: askbi.Internal, Message: "the memory could not be saved", Err: fmt.Errorf("seal: %w", err)}
}

// newID returns a random memory ID.
func newID() string { return "mem_" + strings.ToLower(rand.Text()) }
