package memory

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/askbi/askbi"
)

// MemoryStore is an in-memory Store, for tests and the embedded default.
// One mutex guards every owner, which serializes each owner's limit checks
// and writes within the process; it does not share state across processes.
// It is safe for concurrent use. The zero value is not usable; call
// [NewMemoryStore].
type MemoryStore struct {
	mu     sync.Mutex
	owners map[Owner]map[string]Sealed
	ids    map[string]Owner // every ID, for Conflict across owners
}

// NewMemoryStore returns an empty store.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{owners: map[Owner]map[string]Sealed{}, ids: map[string]Owner{}}
}

// List implements Store.
func (s *MemoryStore) List(_ context.Context, owner Owner) ([]Sealed, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Sealed, 0, len(s.owners[owner]))
	for _, r := range s.owners[owner] {
		out = append(out, clone(r))
	}
	slices.SortFunc(out, func(a, b Sealed) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// Add implements Store.
func (s *MemoryStore) Add(_ context.Context, owner Owner, item Sealed, limits Limits) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.ids[item.ID]; ok {
		return askbi.Errorf(askbi.Conflict, "memory already exists")
	}
	rows := s.owners[owner]
	if err := limits.CheckAdd(len(rows), total(rows), item.Chars); err != nil {
		return err
	}
	if rows == nil {
		rows = map[string]Sealed{}
		s.owners[owner] = rows
	}
	rows[item.ID] = clone(item)
	s.ids[item.ID] = owner
	return nil
}

// Update implements Store.
func (s *MemoryStore) Update(_ context.Context, owner Owner, item Sealed, limits Limits) (Sealed, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rows := s.owners[owner]
	old, ok := rows[item.ID]
	if !ok {
		return Sealed{}, notFound()
	}
	if err := limits.CheckEdit(total(rows), old.Chars, item.Chars); err != nil {
		return Sealed{}, err
	}
	item.CreatedAt = old.CreatedAt
	rows[item.ID] = clone(item)
	return clone(item), nil
}

// Delete implements Store.
func (s *MemoryStore) Delete(_ context.Context, owner Owner, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.owners[owner][id]; !ok {
		return notFound()
	}
	delete(s.owners[owner], id)
	delete(s.ids, id)
	return nil
}

// DeleteAll implements Store.
func (s *MemoryStore) DeleteAll(_ context.Context, owner Owner) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rows := s.owners[owner]
	for id := range rows {
		delete(s.ids, id)
	}
	delete(s.owners, owner)
	return len(rows), nil
}

func total(rows map[string]Sealed) int {
	n := 0
	for _, r := range rows {
		n += r.Chars
	}
	return n
}

func clone(r Sealed) Sealed {
	r.Nonce = slices.Clone(r.Nonce)
	r.Ciphertext = slices.Clone(r.Ciphertext)
	return r
}

func notFound() error { return askbi.Errorf(askbi.NotFound, "memory not found") }
