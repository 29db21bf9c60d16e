package memory

import (
	"context"
	"strconv"
	"time"

	"github.com/askbi/askbi"
)

// Owner is whose memories they are: one user inside one team. Memory never
// crosses teams; the same user has separate memories in each team.
type Owner struct {
	TeamID string
	UserID string
}

// Sealed is a memory as a Store keeps it: encrypted, never plaintext.
//
// Chars, the plaintext's length in Unicode characters, is kept in clear so
// the store can check the limits under its lock without decrypting. A length
// of at most a few hundred characters reveals too little to matter, and it
// is bound into the ciphertext's additional data, so a changed Chars fails to
// decrypt.
type Sealed struct {
	ID         string
	KeyID      string // the Keyring key that sealed Ciphertext
	Nonce      []byte // AES-GCM nonce, 12 bytes
	Ciphertext []byte // AES-256-GCM ciphertext and tag
	Chars      int
	CreatedAt  time.Time // UTC, microsecond precision
	UpdatedAt  time.Time // UTC, microsecond precision
}

// Store keeps the sealed memories of every owner. Every method works only on
// the given owner's rows: another owner's ID is NotFound, exactly as an
// unknown one.
//
// Add and Update enforce the per-owner limits themselves, under a lock per
// owner that also holds across processes sharing the same backing store
// (the in-memory store uses a mutex; a SQL store a transaction-scoped
// advisory lock), so concurrent requests never leave an owner above the
// limits. Implementations must be safe for concurrent use. Package
// memorytest proves one: memorytest.Run(t, newStore).
type Store interface {
	// List returns the owner's memories, oldest created first, ties broken
	// by ID in byte order. An owner with none gets an empty list, not an
	// error. It returns only Internal or Unavailable errors.
	List(ctx context.Context, owner Owner) ([]Sealed, error)
	// Add stores item for owner when limits.CheckAdd, run under the owner's
	// lock on the owner's current count and total, allows it; otherwise it
	// returns that TooLarge error and stores nothing. It returns Conflict,
	// storing nothing, when item.ID exists for any owner.
	Add(ctx context.Context, owner Owner, item Sealed, limits Limits) error
	// Update replaces KeyID, Nonce, Ciphertext, Chars and UpdatedAt of the
	// owner's memory item.ID, keeps its CreatedAt, and returns the stored
	// row. It returns NotFound when the owner has no memory item.ID, and
	// TooLarge, changing nothing, when limits.CheckEdit refuses under the
	// owner's lock.
	Update(ctx context.Context, owner Owner, item Sealed, limits Limits) (Sealed, error)
	// Delete removes the owner's memory id. It returns NotFound when the
	// owner has no memory id.
	Delete(ctx context.Context, owner Owner, id string) error
	// DeleteAll removes every memory of owner, and no one else's, and
	// returns how many it removed.
	DeleteAll(ctx context.Context, owner Owner) (int, error)
}

// The default limits, from the product spec.
const (
	DefaultMaxChars      = 500
	DefaultMaxItems      = 50
	DefaultMaxTotalChars = 8000
)

// Limits caps what one owner may keep. Characters are Unicode characters
// (runes) of the text after trimming surrounding whitespace. A zero or
// negative field means its default.
type Limits struct {
	// MaxChars caps one memory. Default DefaultMaxChars (500).
	MaxChars int
	// MaxItems caps the number of memories per owner. Default
	// DefaultMaxItems (50).
	MaxItems int
	// MaxTotalChars caps the characters of all memories of an owner
	// together. Default DefaultMaxTotalChars (8,000).
	MaxTotalChars int
}

func (l Limits) withDefaults() Limits {
	if l.MaxChars <= 0 {
		l.MaxChars = DefaultMaxChars
	}
	if l.MaxItems <= 0 {
		l.MaxItems = DefaultMaxItems
	}
	if l.MaxTotalChars <= 0 {
		l.MaxTotalChars = DefaultMaxTotalChars
	}
	return l
}

// CheckAdd decides whether an owner who has count memories of total
// characters may add one of chars characters. It returns nil or a TooLarge
// error with a message for the user. Stores call it under the owner's lock.
func (l Limits) CheckAdd(count, total, chars int) error {
	l = l.withDefaults()
	if count >= l.MaxItems {
		return askbi.Errorf(askbi.TooLarge, "you already have the most memories allowed (%s); delete one first", thousands(l.MaxItems))
	}
	if total+chars > l.MaxTotalChars {
		return totalError(l, total+chars)
	}
	return nil
}

// CheckEdit decides whether an owner whose memories hold total characters
// may change one from oldChars to newChars characters. It returns nil or a
// TooLarge error with a message for the user. An edit that does not grow
// the text is always allowed, so an owner above lowered limits can still
// shorten their memories. Stores call it under the owner's lock.
func (l Limits) CheckEdit(total, oldChars, newChars int) error {
	l = l.withDefaults()
	if after := total - oldChars + newChars; newChars > oldChars && after > l.MaxTotalChars {
		return totalError(l, after)
	}
	return nil
}

func totalError(l Limits, after int) error {
	return askbi.Errorf(askbi.TooLarge, "your memories can hold at most %s characters in total; this would make %s, so shorten it or delete a memory first",
		thousands(l.MaxTotalChars), thousands(after))
}

// thousands formats a non-negative n with comma separators: 8000 → "8,000".
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
