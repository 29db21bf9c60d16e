package oauth

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/internal/memtable"
)

// MemoryStore is an in-memory Store, for tests and the embedded default.
// It is safe for concurrent use; everything is lost when the process
// ends.
type MemoryStore struct {
	mu       sync.Mutex
	clients  map[string]Client
	requests map[string]Request
	grants   *memtable.Table[Grant]
	tokens   map[string]Token // by string(Hash)
}

// NewMemoryStore returns an empty store.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{clients: map[string]Client{}, requests: map[string]Request{},
		grants: memtable.New("grant", cloneGrant), tokens: map[string]Token{}}
}

// CreateClient implements Store.
func (s *MemoryStore) CreateClient(_ context.Context, c Client) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.clients[c.ID]; ok {
		return askbi.Errorf(askbi.Conflict, "client already exists")
	}
	s.clients[c.ID] = cloneClient(c)
	return nil
}

// Client implements Store.
func (s *MemoryStore) Client(_ context.Context, id string) (Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clients[id]
	if !ok {
		return Client{}, askbi.Errorf(askbi.NotFound, "client not found")
	}
	return cloneClient(c), nil
}

// CreateRequest implements Store.
func (s *MemoryStore) CreateRequest(_ context.Context, r Request) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.requests[r.ID]; ok {
		return askbi.Errorf(askbi.Conflict, "request already exists")
	}
	r.CSRFHash = slices.Clone(r.CSRFHash)
	s.requests[r.ID] = r
	return nil
}

// TakeRequest implements Store.
func (s *MemoryStore) TakeRequest(_ context.Context, id string, now time.Time) (Request, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.requests[id]
	if !ok || !r.ExpiresAt.After(now) {
		return Request{}, askbi.Errorf(askbi.NotFound, "authorization request not found or expired")
	}
	delete(s.requests, id)
	return r, nil
}

// CreateGrant implements Store.
func (s *MemoryStore) CreateGrant(_ context.Context, g Grant) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.grants.Insert(g.ID, g)
}

// Grant implements Store.
func (s *MemoryStore) Grant(_ context.Context, id string) (Grant, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.grants.Get(id)
}

// Grants implements Store.
func (s *MemoryStore) Grants(_ context.Context, userID string) ([]Grant, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.grants.Newest(func(g Grant) bool { return g.UserID == userID && g.RevokedAt.IsZero() },
		func(g Grant) (time.Time, string) { return g.CreatedAt, g.ID }), nil
}

// RevokeGrant implements Store.
func (s *MemoryStore) RevokeGrant(_ context.Context, id string, t time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.grants.Change(id, func(g *Grant) {
		if g.RevokedAt.IsZero() {
			g.RevokedAt = t
		}
	})
	if err != nil {
		return err
	}
	for k, tok := range s.tokens {
		if tok.GrantID == id {
			delete(s.tokens, k)
		}
	}
	return nil
}

// CreateToken implements Store.
func (s *MemoryStore) CreateToken(_ context.Context, t Token) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.tokens[string(t.Hash)]; ok {
		return askbi.Errorf(askbi.Conflict, "token already exists")
	}
	s.tokens[string(t.Hash)] = cloneToken(t)
	return nil
}

// Token implements Store.
func (s *MemoryStore) Token(_ context.Context, hash []byte) (Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tokens[string(hash)]
	if !ok {
		return Token{}, askbi.Errorf(askbi.NotFound, "token not found")
	}
	return cloneToken(t), nil
}

// UseToken implements Store.
func (s *MemoryStore) UseToken(_ context.Context, hash []byte, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tokens[string(hash)]
	if !ok {
		return askbi.Errorf(askbi.NotFound, "token not found")
	}
	if !t.UsedAt.IsZero() {
		return askbi.Errorf(askbi.Conflict, "token already used")
	}
	t.UsedAt = at
	s.tokens[string(hash)] = t
	return nil
}

// DeleteTokens implements Store.
func (s *MemoryStore) DeleteTokens(_ context.Context, grantID string, kind TokenKind) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, t := range s.tokens {
		if t.GrantID == grantID && t.Kind == kind {
			delete(s.tokens, k)
		}
	}
	return nil
}

// Purge implements Store.
func (s *MemoryStore) Purge(_ context.Context, now time.Time) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for id, r := range s.requests {
		if !r.ExpiresAt.After(now) {
			delete(s.requests, id)
			n++
		}
	}
	live := map[string]bool{}
	for k, t := range s.tokens {
		if !t.ExpiresAt.After(now) {
			delete(s.tokens, k)
			n++
			continue
		}
		live[t.GrantID] = true
	}
	n += s.grants.Delete(func(g Grant) bool { return !g.RevokedAt.IsZero() || !live[g.ID] })
	return n, nil
}

func cloneClient(c Client) Client {
	c.SecretHash = slices.Clone(c.SecretHash)
	c.RedirectURIs = slices.Clone(c.RedirectURIs)
	c.Scopes = slices.Clone(c.Scopes)
	return c
}

func cloneGrant(g Grant) Grant {
	g.Scopes = slices.Clone(g.Scopes)
	g.Projects.IDs = slices.Clone(g.Projects.IDs)
	return g
}

func cloneToken(t Token) Token {
	t.Hash = slices.Clone(t.Hash)
	t.Scopes = slices.Clone(t.Scopes)
	t.Audience = slices.Clone(t.Audience)
	return t
}
