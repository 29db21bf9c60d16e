package memory

import (
	"encoding/binary"

	"github.com/askbi/askbi/seal"
)

// The keyring is package seal's, shared with the other secrets askbi keeps
// at rest (remote MCP connection tokens): a host configures one key set.
// These names keep memory's API as it was.

// KeySize is the length of a memory encryption key: AES-256.
const KeySize = seal.KeySize

// Keyring holds the keys that seal memories at rest; see [seal.Keyring].
type Keyring = seal.Keyring

// StaticKeyring is a Keyring over a fixed set of keys; see
// [seal.StaticKeyring].
type StaticKeyring = seal.StaticKeyring

// NewStaticKeyring is [seal.NewStaticKeyring].
func NewStaticKeyring(current string, keys map[string][]byte) (*StaticKeyring, error) {
	return seal.NewStaticKeyring(current, keys)
}

// GenerateKey is [seal.GenerateKey].
func GenerateKey() []byte { return seal.GenerateKey() }

// ParseKey is [seal.ParseKey].
func ParseKey(s string) ([]byte, error) { return seal.ParseKey(s) }

// additionalData binds a ciphertext to its owner, memory ID and length, so
// a row copied to another owner or ID, or given another length, fails to
// open. It encodes as it always has, so memories sealed before the
// keyring moved to package seal still open.
func additionalData(o Owner, id string, chars int) []byte {
	ad := seal.Context("askbi.memory.v1", o.TeamID, o.UserID, id)
	return binary.AppendUvarint(ad, uint64(chars))
}

// sealText encrypts text, of chars characters, for owner o's memory id under the
// keyring's current key, and fills s's KeyID, Nonce, Ciphertext and Chars.
func sealText(keys Keyring, o Owner, s *Sealed, text string, chars int) error {
	s.Chars = chars
	b, err := seal.Seal(keys, []byte(text), additionalData(o, s.ID, chars))
	if err != nil {
		return err
	}
	s.KeyID, s.Nonce, s.Ciphertext = b.KeyID, b.Nonce, b.Ciphertext
	return nil
}

// open decrypts s, a memory of owner o.
func open(keys Keyring, o Owner, s Sealed) (string, error) {
	text, err := seal.Open(keys, seal.Box{KeyID: s.KeyID, Nonce: s.Nonce, Ciphertext: s.Ciphertext}, additionalData(o, s.ID, s.Chars))
	if err != nil {
		return "", err
	}
	return string(text), nil
}
