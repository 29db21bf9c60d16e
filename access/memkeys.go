package access

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/internal/memtable"
)

// MemoryKeyStore is an in-memory [KeyStore], safe for concurrent use.
type MemoryKeyStore struct {
	mu   sync.Mutex
	keys *memtable.Table[Key] // by ID
}

// NewMemoryKeyStore returns an empty store.
func NewMemoryKeyStore() *MemoryKeyStore {
	return &MemoryKeyStore{keys: memtable.New("API key", cloneKey)}
}

// Create implements [KeyStore].
func (s *MemoryKeyStore) Create(_ context.Context, k Key) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, taken := s.keys.Find(func(old Key) bool { return old.Prefix == k.Prefix }); taken {
		return askbi.Errorf(askbi.Conflict, "API key already exists")
	}
	return s.keys.Insert(k.ID, k)
}

// ByPrefix implements [KeyStore].
func (s *MemoryKeyStore) ByPrefix(_ context.Context, prefix string) (Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k, ok := s.keys.Find(func(k Key) bool { return k.Prefix == prefix }); ok {
		return k, nil
	}
	return Key{}, askbi.Errorf(askbi.NotFound, "API key not found")
}

// List implements [KeyStore].
func (s *MemoryKeyStore) List(_ context.Context, teamID, userID string) ([]Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys.Newest(func(k Key) bool { return k.TeamID == teamID && k.UserID == userID }, keyCreated), nil
}

// Revoke implements [KeyStore].
func (s *MemoryKeyStore) Revoke(_ context.Context, id string, t time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys.Change(id, func(k *Key) {
		if k.RevokedAt.IsZero() {
			k.RevokedAt = t
		}
	})
}

// Touch implements [KeyStore].
func (s *MemoryKeyStore) Touch(_ context.Context, id string, t time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys.Change(id, func(k *Key) { k.LastUsedAt = t })
}

func keyCreated(k Key) (time.Time, string) { return k.CreatedAt, k.ID }

func cloneKey(k Key) Key {
	k.Hash = slices.Clone(k.Hash)
	k.Scopes = slices.Clone(k.Scopes)
	k.Projects.IDs = slices.Clone(k.Projects.IDs)
	return k
}
