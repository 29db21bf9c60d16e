package main

import (
	"fmt"
	"os"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/mcpserver/oauth"
	"github.com/askbi/askbi/memory"
	"github.com/askbi/askbi/seal"
)

// The environment variables holding the server's keys: the memory
// encryption key (base64 of 32 random bytes), and the HMAC key of MCP
// OAuth tokens (base64 of at least 32 random bytes). Unset, the demo's
// development keys stand in (demo_keys.go).
const (
	memoryKeyEnv   = "ASKBI_MEMORY_KEY"
	oauthSecretEnv = "ASKBI_OAUTH_SECRET"
)

// memoryKeyring returns the keyring sealing memories and connection
// tokens, with the key in ASKBI_MEMORY_KEY or else a development key,
// named by its fingerprint (seal.KeyringOf).
func (a *app) memoryKeyring(cfg config, inMemory bool) (*memory.StaticKeyring, error) {
	key, err := envKey(memoryKeyEnv, seal.ParseKey)
	if err == nil && key == nil {
		key, err = a.devMemoryKeyFor(cfg, inMemory)
	}
	if err != nil {
		return nil, err
	}
	return seal.KeyringOf(key)
}

// oauthSecret returns the token key: ASKBI_OAUTH_SECRET, or else a
// development key (nil with in-memory state: oauth.New draws one).
func (a *app) oauthSecret(cfg config, inMemory bool) ([]byte, error) {
	key, err := envKey(oauthSecretEnv, oauth.ParseSecret)
	if err == nil && key == nil && !inMemory {
		key, err = a.devOAuthSecret(cfg)
	}
	return key, err
}

// envKey returns the key in environment variable env read by parse, or
// nil when env is not set.
func envKey(env string, parse func(string) ([]byte, error)) ([]byte, error) {
	v, ok := os.LookupEnv(env)
	if !ok {
		return nil, nil
	}
	k, err := parse(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %s", env, askbi.ErrorMessage(err))
	}
	return k, nil
}
