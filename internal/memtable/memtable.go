// Package memtable is the record table of the SDK's in-memory stores: a
// map of records by ID that hands out copies, so a caller never shares
// a record's slices with the store. It holds no lock: each store guards
// its tables with its own mutex, so one change can span several tables.
package memtable

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/askbi/askbi"
)

// Table holds records of one kind by ID. Use New; the zero value is not
// usable.
type Table[T any] struct {
	rows  map[string]T
	clone func(T) T
	noun  string // in errors: "API key", "grant"
}

// New returns an empty table. clone copies a record's slices; noun names
// a record in errors ("grant not found").
func New[T any](noun string, clone func(T) T) *Table[T] {
	return &Table[T]{rows: map[string]T{}, clone: clone, noun: noun}
}

// Insert stores a copy of v as id. It returns Conflict when id is there.
func (t *Table[T]) Insert(id string, v T) error {
	if _, ok := t.rows[id]; ok {
		return askbi.Errorf(askbi.Conflict, "%s already exists", t.noun)
	}
	t.rows[id] = t.clone(v)
	return nil
}

// Get returns a copy of record id, or NotFound.
func (t *Table[T]) Get(id string) (T, error) {
	v, ok := t.rows[id]
	if !ok {
		var zero T
		return zero, askbi.Errorf(askbi.NotFound, "%s not found", t.noun)
	}
	return t.clone(v), nil
}

// Change applies f to record id, or returns NotFound.
func (t *Table[T]) Change(id string, f func(*T)) error {
	v, ok := t.rows[id]
	if !ok {
		return askbi.Errorf(askbi.NotFound, "%s not found", t.noun)
	}
	f(&v)
	t.rows[id] = v
	return nil
}

// Delete removes the records drop reports, and returns how many.
func (t *Table[T]) Delete(drop func(T) bool) int {
	n := 0
	for id, v := range t.rows {
		if drop(v) {
			delete(t.rows, id)
			n++
		}
	}
	return n
}

// Find returns a copy of the first record match reports, in no order,
// and whether there was one.
func (t *Table[T]) Find(match func(T) bool) (T, bool) {
	for _, v := range t.rows {
		if match(v) {
			return t.clone(v), true
		}
	}
	var zero T
	return zero, false
}

// Newest returns copies of the records keep reports, newest first by
// created (its time and, on a tie, its ID, the larger first).
func (t *Table[T]) Newest(keep func(T) bool, created func(T) (time.Time, string)) []T {
	var out []T
	for _, v := range t.rows {
		if keep(v) {
			out = append(out, t.clone(v))
		}
	}
	slices.SortFunc(out, func(a, b T) int {
		ta, ia := created(a)
		tb, ib := created(b)
		return cmp.Or(tb.Compare(ta), strings.Compare(ib, ia))
	})
	return out
}
