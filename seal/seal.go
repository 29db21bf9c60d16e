// Package seal is the keyring and the AES-256-GCM sealing that askbi uses
// for every secret it keeps at rest: explicit memories (package memory)
// and the tokens of remote MCP connections (package connections seals
// them, package connections/signin opens them).
// One keyring, one primitive: a host configures and rotates one key set.
//
// It imports only the root package, so every layer may use it.
//
//	keys, err := seal.NewStaticKeyring("2026-09", map[string][]byte{"2026-09": key}) // key from seal.ParseKey
//	box, err := seal.Seal(keys, []byte("token"), seal.Context("askbi.example.v1", teamID, id))
//	plain, err := seal.Open(keys, box, seal.Context("askbi.example.v1", teamID, id))
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/askbi/askbi"
)

// KeySize is the length of a key: AES-256.
const KeySize = 32

// maxKeyID caps a key ID, which is stored beside every sealed value.
const maxKeyID = 64

// Keyring holds the keys that seal secrets at rest. The host supplies it,
// from its secret store or configuration; the SDK never reads keys from the
// environment.
//
// Rotation: make a new key Current and keep the old ones reachable through
// Key. Values sealed under an old key still open; a change reseals under
// the current key. Implementations must be safe for concurrent use.
type Keyring interface {
	// Current returns the ID and the KeySize-byte key that new values are
	// sealed with.
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
// a key is not [KeySize] bytes, or a key ID is empty or longer than 64 bytes.
// It copies keys.
func NewStaticKeyring(current string, keys map[string][]byte) (*StaticKeyring, error) {
	if _, ok := keys[current]; !ok {
		return nil, askbi.Errorf(askbi.InvalidArgument, "keyring: the current key %q is not in the keyring", current)
	}
	r := &StaticKeyring{current: current, keys: map[string][]byte{}}
	for _, id := range slices.Sorted(maps.Keys(keys)) {
		if id == "" || len(id) > maxKeyID {
			return nil, askbi.Errorf(askbi.InvalidArgument, "keyring: a key ID must be 1 to %d bytes", maxKeyID)
		}
		if len(keys[id]) != KeySize {
			return nil, askbi.Errorf(askbi.InvalidArgument, "keyring: key %q must be %d bytes", id, KeySize)
		}
		r.keys[id] = slices.Clone(keys[id])
	}
	return r, nil
}

// KeyringOf returns a keyring of the one key, whose ID is its fingerprint
// ("k" and 16 hex digits of its SHA-256): a box sealed under another key
// then names a key the keyring does not have, and fails to open as such
// rather than as a forgery. For a host that keeps a single key (in an
// environment variable, say) and rotates by restarting with both.
func KeyringOf(key []byte) (*StaticKeyring, error) {
	sum := sha256.Sum256(key)
	id := "k" + hex.EncodeToString(sum[:8])
	return NewStaticKeyring(id, map[string][]byte{id: key})
}

// Current implements Keyring.
func (r *StaticKeyring) Current() (string, []byte) { return r.current, slices.Clone(r.keys[r.current]) }

// Key implements Keyring.
func (r *StaticKeyring) Key(id string) ([]byte, error) {
	k, ok := r.keys[id]
	if !ok {
		return nil, askbi.Errorf(askbi.NotFound, "keyring: unknown key %q", id)
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
// of [KeySize] bytes, as a host reads it from its configuration. It returns
// InvalidArgument, without echoing s, when s is not such a key.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimRight(strings.TrimSpace(s), "=")
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		if k, err := enc.DecodeString(s); err == nil {
			if len(k) != KeySize {
				return nil, askbi.Errorf(askbi.InvalidArgument, "key: must be %d bytes in base64, got %d bytes", KeySize, len(k))
			}
			return k, nil
		}
	}
	return nil, askbi.Errorf(askbi.InvalidArgument, "key: not valid base64")
}

// Box is a sealed value: the ID of the key that sealed it, the nonce and
// the ciphertext (with its authentication tag). Store all three.
type Box struct {
	KeyID      string
	Nonce      []byte
	Ciphertext []byte
}

// Context builds additional data that binds a sealed value to where it
// belongs (a purpose label, then owner and row IDs, say), so a value copied
// to another row fails to open. Each part is length-prefixed, so no two
// lists encode alike.
func Context(purpose string, parts ...string) []byte {
	ad := []byte(purpose)
	for _, f := range parts {
		ad = binary.AppendUvarint(ad, uint64(len(f)))
		ad = append(ad, f...)
	}
	return ad
}

// Seal encrypts plain under the keyring's current key, bound to
// additional data ad (see Context).
func Seal(keys Keyring, plain, ad []byte) (Box, error) {
	id, key := keys.Current()
	aead, err := newAEAD(key)
	if err != nil {
		return Box{}, fmt.Errorf("current key %q: %w", id, err)
	}
	b := Box{KeyID: id, Nonce: make([]byte, aead.NonceSize())}
	rand.Read(b.Nonce)
	b.Ciphertext = aead.Seal(nil, b.Nonce, plain, ad)
	return b, nil
}

// Open decrypts b, which must have been sealed with the same additional
// data ad. It returns the keyring's NotFound for an unknown key, and a
// plain error for a value that does not open (another key, another ad, or
// tampering).
func Open(keys Keyring, b Box, ad []byte) ([]byte, error) {
	key, err := keys.Key(b.KeyID)
	if err != nil {
		return nil, err
	}
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	if len(b.Nonce) != aead.NonceSize() {
		return nil, fmt.Errorf("nonce of %d bytes", len(b.Nonce))
	}
	return aead.Open(nil, b.Nonce, b.Ciphertext, ad)
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
