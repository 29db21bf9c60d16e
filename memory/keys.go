package memory

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/askbi/askbi"
)

// KeySize is the length of a memory encryption key: AES-256.
const KeySize = 32

// maxKeyID caps a key ID, which is stored beside every sealed memory.
const maxKeyID = 64

// Keyring holds the keys that seal memories at rest. The host supplies it,
// from its secret store or configuration; the SDK never reads keys from the
// environment.
//
// Rotation: make a new key Current and keep the old ones reachable through
// Key. Memories sealed under an old key still open; an edit reseals under
// the current key. Implementations must be safe for concurrent use.
type Keyring interface {
	// Current returns the ID and the KeySize-byte key that new and edited
	// memories are sealed with.
	Current() (id string, key []byte)
	// Key returns the key with id. It returns NotFound for an unknown id.
	Key(id string) ([]byte, error)
}

// StaticKeyring is a Keyring over a fixed set of keys. It is immutable and
// safe for concurrent use.
type StaticKeyring struct {
	current string
	keys    map[string][]byte
}

// NewStaticKeyring returns a keyring sealing with keys[current] and opening
// with any of keys. It returns InvalidArgument when current is not in keys,
// a key is not KeySize bytes, or a key ID is empty or longer than 64 bytes.
// It copies keys.
func NewStaticKeyring(current string, keys map[string][]byte) (*StaticKeyring, error) {
	if _, ok := keys[current]; !ok {
		return nil, askbi.Errorf(askbi.InvalidArgument, "memory keyring: the current key %q is not in the keyring", current)
	}
	r := &StaticKeyring{current: current, keys: map[string][]byte{}}
	for _, id := range slices.Sorted(maps.Keys(keys)) {
		if id == "" || len(id) > maxKeyID {
			return nil, askbi.Errorf(askbi.InvalidArgument, "memory keyring: a key ID must be 1 to %d bytes", maxKeyID)
		}
		if len(keys[id]) != KeySize {
			return nil, askbi.Errorf(askbi.InvalidArgument, "memory keyring: key %q must be %d bytes", id, KeySize)
		}
		r.keys[id] = slices.Clone(keys[id])
	}
	return r, nil
}

// Current implements Keyring.
func (r *StaticKeyring) Current() (string, []byte) { return r.current, slices.Clone(r.keys[r.current]) }

// Key implements Keyring.
func (r *StaticKeyring) Key(id string) ([]byte, error) {
	k, ok := r.keys[id]
	if !ok {
		return nil, askbi.Errorf(askbi.NotFound, "memory keyring: unknown key %q", id)
	}
	return slices.Clone(k), nil
}

// GenerateKey returns a new random KeySize-byte key.
func GenerateKey() []byte {
	k := make([]byte, KeySize)
	rand.Read(k) // never fails, per crypto/rand
	return k
}

// ParseKey decodes a base64 key (standard or URL alphabet, padded or not)
// of KeySize bytes, as a host reads it from its configuration. It returns
// InvalidArgument, without echoing s, when s is not such a key.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimRight(strings.TrimSpace(s), "=")
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		if k, err := enc.DecodeString(s); err == nil {
			if len(k) != KeySize {
				return nil, askbi.Errorf(askbi.InvalidArgument, "memory key: must be %d bytes in base64, got %d bytes", KeySize, len(k))
			}
			return k, nil
		}
	}
	return nil, askbi.Errorf(askbi.InvalidArgument, "memory key: not valid base64")
}

// additionalData binds a ciphertext to its owner, memory ID and length, so
// a row copied to another owner or ID, or given another length, fails to
// open. Each field is length-prefixed, so no two tuples encode alike.
func additionalData(o Owner, id string, chars int) []byte {
	ad := []byte("askbi.memory.v1")
	for _, f := range []string{o.TeamID, o.UserID, id} {
		ad = binary.AppendUvarint(ad, uint64(len(f)))
		ad = append(ad, f...)
	}
	return binary.AppendUvarint(ad, uint64(chars))
}

// seal encrypts text, of chars characters, for owner o's memory id under the
// keyring's current key, and fills s's KeyID, Nonce, Ciphertext and Chars.
func seal(keys Keyring, o Owner, s *Sealed, text string, chars int) error {
	id, key := keys.Current()
	aead, err := newAEAD(key)
	if err != nil {
		return fmt.Errorf("current key %q: %w", id, err)
	}
	s.KeyID, s.Chars = id, chars
	s.Nonce = make([]byte, aead.NonceSize())
	rand.Read(s.Nonce)
	s.Ciphertext = aead.Seal(nil, s.Nonce, []byte(text), additionalData(o, s.ID, chars))
	return nil
}

// open decrypts s, a memory of owner o.
func open(keys Keyring, o Owner, s Sealed) (string, error) {
	key, err := keys.Key(s.KeyID)
	if err != nil {
		return "", err
	}
	aead, err := newAEAD(key)
	if err != nil {
		return "", err
	}
	if len(s.Nonce) != aead.NonceSize() {
		return "", fmt.Errorf("nonce of %d bytes", len(s.Nonce))
	}
	text, err := aead.Open(nil, s.Nonce, s.Ciphertext, additionalData(o, s.ID, s.Chars))
	if err != nil {
		return "", err
	}
	return string(text), nil
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("key of %d bytes, want %d", len(key), KeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}
