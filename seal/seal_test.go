package seal_test

import (
	"bytes"
	"testing"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/seal"
)

func mustKeyring(t *testing.T, current string, keys map[string][]byte) *seal.StaticKeyring {
	t.Helper()
	r, err := seal.NewStaticKeyring(current, keys)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestSealOpen(t *testing.T) {
	k1, k2 := seal.GenerateKey(), seal.GenerateKey()
	old := mustKeyring(t, "k1", map[string][]byte{"k1": k1})
	rotated := mustKeyring(t, "k2", map[string][]byte{"k1": k1, "k2": k2})
	ad := seal.Context("askbi.test.v1", "team", "row")
	box, err := seal.Seal(old, []byte("secret"), ad)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(box.Ciphertext, []byte("secret")) || box.KeyID != "k1" {
		t.Fatalf("Seal = %+v; want ciphertext under k1", box)
	}
	if got, err := seal.Open(rotated, box, ad); err != nil || string(got) != "secret" {
		t.Errorf("Open after rotation = %q, %v; want the secret", got, err)
	}
	for name, tc := range map[string]struct {
		keys seal.Keyring
		box  seal.Box
		ad   []byte
	}{
		"another row":   {rotated, box, seal.Context("askbi.test.v1", "team", "other")},
		"parts shifted": {rotated, box, seal.Context("askbi.test.v1", "teamrow")},
		"tampered":      {rotated, seal.Box{KeyID: box.KeyID, Nonce: box.Nonce, Ciphertext: append([]byte{box.Ciphertext[0] ^ 1}, box.Ciphertext[1:]...)}, ad},
		"short nonce":   {rotated, seal.Box{KeyID: box.KeyID, Nonce: box.Nonce[:4], Ciphertext: box.Ciphertext}, ad},
	} {
		if _, err := seal.Open(tc.keys, tc.box, tc.ad); err == nil {
			t.Errorf("Open (%s) succeeded; want an error", name)
		}
	}
	if _, err := seal.Open(mustKeyring(t, "k2", map[string][]byte{"k2": k2}), box, ad); askbi.ErrorCode(err) != askbi.NotFound {
		t.Errorf("Open with the key gone = %v; want not_found", err)
	}
}

// TestKeyringOf: a one-key keyring is named by its key's fingerprint, so
// the same key names itself the same on every start and another key
// cannot open its boxes, and a bad key is refused.
func TestKeyringOf(t *testing.T) {
	key := seal.GenerateKey()
	a, err := seal.KeyringOf(key)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := seal.KeyringOf(bytes.Clone(key))
	other, _ := seal.KeyringOf(seal.GenerateKey())
	idA, _ := a.Current()
	idB, _ := b.Current()
	idO, _ := other.Current()
	if idA != idB || idA == idO || len(idA) != 17 || idA[0] != 'k' {
		t.Errorf("key IDs %q, %q (same key), %q (another); want one fingerprint per key", idA, idB, idO)
	}
	ad := seal.Context("askbi.test.v1", "team", "row")
	box, err := seal.Seal(a, []byte("secret"), ad)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := seal.Open(b, box, ad); err != nil || string(got) != "secret" {
		t.Errorf("the same key, started again: %q, %v", got, err)
	}
	if _, err := seal.Open(other, box, ad); err == nil {
		t.Error("another key opened the box")
	}
	if _, err := seal.KeyringOf([]byte("short")); askbi.ErrorCode(err) != askbi.InvalidArgument {
		t.Errorf("a short key: %v; want invalid_argument", err)
	}
}
