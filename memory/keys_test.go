package memory_test

import (
	"bytes"
	"encoding/base64"
	"slices"
	"strings"
	"testing"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/memory"
)

func TestParseKey(t *testing.T) {
	key := bytes.Repeat([]byte{0xfb, 0xff, 0x01}, 11)[:memory.KeySize]
	for _, tc := range []struct {
		name, in string
		code     askbi.Code
	}{
		{"StdPadded", base64.StdEncoding.EncodeToString(key), ""},
		{"StdRaw", base64.RawStdEncoding.EncodeToString(key), ""},
		{"URLPadded", base64.URLEncoding.EncodeToString(key), ""},
		{"URLRaw", base64.RawURLEncoding.EncodeToString(key), ""},
		{"SurroundingSpace", " " + base64.StdEncoding.EncodeToString(key) + "\n", ""},
		{"Empty", "", askbi.InvalidArgument},
		{"TooShort", base64.StdEncoding.EncodeToString(key[:16]), askbi.InvalidArgument},
		{"TooLong", base64.StdEncoding.EncodeToString(append(key, 0)), askbi.InvalidArgument},
		{"NotBase64", "secret!secret!secret!secret!secret!secret!secret!", askbi.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := memory.ParseKey(tc.in)
			if code := askbi.ErrorCode(err); code != tc.code {
				t.Fatalf("ParseKey = %v, want code %q", err, tc.code)
			}
			if err != nil {
				if tc.in != "" && strings.Contains(err.Error(), strings.TrimSpace(tc.in)) {
					t.Errorf("error %q echoes the key", err)
				}
				return
			}
			if !bytes.Equal(got, key) {
				t.Errorf("ParseKey = %x, want %x", got, key)
			}
		})
	}
}

func TestGenerateKey(t *testing.T) {
	a, b := memory.GenerateKey(), memory.GenerateKey()
	if len(a) != memory.KeySize || bytes.Equal(a, b) {
		t.Fatalf("GenerateKey = %x, %x; want two different %d-byte keys", a, b, memory.KeySize)
	}
	got, err := memory.ParseKey(base64.StdEncoding.EncodeToString(a))
	if err != nil || !bytes.Equal(got, a) {
		t.Errorf("ParseKey(encoded GenerateKey) = %x, %v", got, err)
	}
}

func TestNewStaticKeyring(t *testing.T) {
	k := memory.GenerateKey()
	for _, tc := range []struct {
		name    string
		current string
		keys    map[string][]byte
		code    askbi.Code
	}{
		{"OK", "k2", map[string][]byte{"k1": k, "k2": k}, ""},
		{"CurrentMissing", "k3", map[string][]byte{"k1": k}, askbi.InvalidArgument},
		{"NoKeys", "k1", nil, askbi.InvalidArgument},
		{"ShortKey", "k1", map[string][]byte{"k1": k[:16]}, askbi.InvalidArgument},
		{"ShortOldKey", "k1", map[string][]byte{"k1": k, "k0": k[:31]}, askbi.InvalidArgument},
		{"EmptyID", "", map[string][]byte{"": k}, askbi.InvalidArgument},
		{"LongID", strings.Repeat("k", 65), map[string][]byte{strings.Repeat("k", 65): k}, askbi.InvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := memory.NewStaticKeyring(tc.current, tc.keys)
			if code := askbi.ErrorCode(err); code != tc.code {
				t.Errorf("NewStaticKeyring = %v, want code %q", err, tc.code)
			}
		})
	}
}

func TestStaticKeyring(t *testing.T) {
	k1, k2 := memory.GenerateKey(), memory.GenerateKey()
	keys := map[string][]byte{"k1": slices.Clone(k1), "k2": slices.Clone(k2)}
	r, err := memory.NewStaticKeyring("k2", keys)
	if err != nil {
		t.Fatal(err)
	}
	keys["k2"][0]++ // the keyring holds its own copy
	_, cur := r.Current()
	cur[1]++ // and hands out copies
	if id, cur := r.Current(); id != "k2" || !bytes.Equal(cur, k2) {
		t.Errorf("Current = %s, %x; want k2, %x", id, cur, k2)
	}
	if got, err := r.Key("k1"); err != nil || !bytes.Equal(got, k1) {
		t.Errorf("Key(k1) = %x, %v; want %x", got, err, k1)
	}
	if _, err := r.Key("k3"); askbi.ErrorCode(err) != askbi.NotFound {
		t.Errorf("Key(unknown) = %v, want not_found", err)
	}
}
