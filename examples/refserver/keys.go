package main

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/memory"
)

// The environment variables holding the server's keys: the memory
// encryption key (base64 of 32 random bytes), and the HMAC key of MCP
// OAuth tokens (base64 of at least 32 random bytes). Unset, the demo's
// development keys stand in (demo_keys.go).
const (
	memoryKeyEnv   = "ASKBI_MEMORY_KEY"
	oauthSecretEnv = "ASKBI_OAUTH_SECRET"
)

// memoryKeyring returns the keyring sealing memories, with the key in
// ASKBI_MEMORY_KEY or else a development key.
func (a *app) memoryKeyring(cfg config, inMemory bool) (*memory.StaticKeyring, error) {
	key, err := a.envKey(memoryKeyEnv, parseMemoryKey)
	if err == nil && key == nil {
		key, err = a.devMemoryKeyFor(cfg, inMemory)
	}
	if err != nil {
		return nil, err
	}
	// The key ID is a fingerprint, so memories sealed under another key
	// are reported as such rather than failing to open silently.
	sum := sha256.Sum256(key)
	id := "k" + hex.EncodeToString(sum[:8])
	return memory.NewStaticKeyring(id, map[string][]byte{id: key})
}

// oauthSecret returns the token key: ASKBI_OAUTH_SECRET, or else a
// development key (nil with in-memory state: oauth.New draws one).
func (a *app) oauthSecret(cfg config, inMemory bool) ([]byte, error) {
	key, err := a.envKey(oauthSecretEnv, parseOAuthSecret)
	if err == nil && key == nil && !inMemory {
		key, err = a.devOAuthSecret(cfg)
	}
	return key, err
}

// envKey returns the key in environment variable env read by parse, or
// nil when env is not set.
func (a *app) envKey(env string, parse func(string) ([]byte, error)) ([]byte, error) {
	v, ok := os.LookupEnv(env)
	if !ok {
		return nil, nil
	}
	k, err := parse(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", env, err)
	}
	return k, nil
}

func parseMemoryKey(s string) ([]byte, error) {
	k, err := memory.ParseKey(s)
	if err != nil {
		return nil, errors.New(askbi.ErrorMessage(err))
	}
	return k, nil
}

// parseOAuthSecret reads base64 of at least 32 bytes.
func parseOAuthSecret(s string) ([]byte, error) {
	k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil || len(k) < 32 {
		return nil, errors.New("must be base64 of at least 32 bytes")
	}
	return k, nil
}
