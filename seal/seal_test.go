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
