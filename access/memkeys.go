package access

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/askbi/askbi"
)

// MemoryKeyStore is an in-memory KeyStore, safe for concurrent use.
type MemoryKeyStore struct {
	mu   sync.Mutex
	keys map[string]*Key // by ID
}

// NewMemoryKeyStore returns an empty store.
func NewMemoryKeyStore() *MemoryKeyStore { return &MemoryKeyStore{keys: map[string]*Key{}} }

// Create implements KeyStore.
func (s *MemoryKeyStore) Create(_ context.Context, k Key) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, old := range s.keys {
		if old.ID == k.ID || old.Prefix == k.Prefix {
			return askbi.Errorf(askbi.Conflict, "API key already exists")
		}
	}
	k = cloneKey(k)
	s.keys[k.ID] = &k
	return nil
}

// ByPrefix implements KeyStore.
func (s *MemoryKeyStore) ByPrefix(_ context.Context, prefix string) (Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range s.keys {
		if k.Prefix == prefix {
			return cloneKey(*k), nil
		}
	}
	return Key{}, askbi.Errorf(askbi.NotFound, "API key not found")
}

// List implements KeyStore.
func (s *MemoryKeyStore) List(_ context.Context, teamID, userID string) ([]Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Key
	for _, k := range s.keys {
		if k.TeamID == teamID && k.UserID == userID {
			out = append(out, cloneKey(*k))
		}
	}
	// Newest first, ties by ID.
	slices.SortFunc(out, func(a, b Key) int { return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), strings.Compare(b.ID, a.ID)) })
	return out, nil
}

// Revoke implements KeyStore.
func (s *MemoryKeyStore) Revoke(_ context.Context, id string, t time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.keys[id]
	if !ok {
		return askbi.Errorf(askbi.NotFound, "API key not found")
	}
	if k.RevokedAt.IsZero() {
		k.RevokedAt = t
	}
	return nil
}

// Touch implements KeyStore.
func (s *MemoryKeyStore) Touch(_ context.Context, id string, t time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.keys[id]
	if !ok {
		return askbi.Errorf(askbi.NotFound, "API key not found")
	}
	k.LastUsedAt = t
	return nil
}

func cloneKey(k Key) Key {
	k.Hash = slices.Clone(k.Hash)
	k.Scopes = slices.Clone(k.Scopes)
	k.Projects.IDs = slices.Clone(k.Projects.IDs)
	return k
}
