package main

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/mcpserver/oauth"
	"github.com/askbi/askbi/memory"
	"github.com/askbi/askbi/seal"
)

// devMemoryKeyFor is the development memory key: kept in the data folder
// (so memories survive restarts), or a throwaway one when state is in
// memory only.
func (a *app) devMemoryKeyFor(cfg config, inMemory bool) ([]byte, error) {
	if inMemory {
		a.log.Warn(memoryKeyEnv + " is not set: memories are sealed with a throwaway development key; production must set " + memoryKeyEnv + " (base64 of 32 random bytes)")
		return memory.GenerateKey(), nil
	}
	path := filepath.Join(cfg.dataDir, "memory-key")
	k, err := devMemoryKey(path)
	if err != nil {
		return nil, err
	}
	a.log.Warn(memoryKeyEnv+" is not set: memories are sealed with a development key kept in the data folder; production must set "+memoryKeyEnv+" (base64 of 32 random bytes)", "file", path)
	return k, nil
}

// devOAuthSecret is the development OAuth token key, kept in the data
// folder so grants survive restarts on PostgreSQL.
func (a *app) devOAuthSecret(cfg config) ([]byte, error) {
	path := filepath.Join(cfg.dataDir, "oauth-secret")
	k, err := devKey(path, func() []byte {
		k := make([]byte, 32)
		rand.Read(k)
		return k
	}, oauth.ParseSecret)
	if err != nil {
		return nil, err
	}
	a.log.Warn(oauthSecretEnv+" is not set: MCP OAuth tokens are signed with a development key kept in the data folder; production must set "+oauthSecretEnv, "file", path)
	return k, nil
}

// devMemoryKey reads the development memory key at path, creating it
// (0600) on first use.
func devMemoryKey(path string) ([]byte, error) {
	return devKey(path, memory.GenerateKey, seal.ParseKey)
}

// devKey reads a development key kept at path with parse, or writes a
// new one from generate (base64, 0600) on first use. The key is written
// whole to a file of its own, then linked into place (link fails if the
// path exists), so of two processes starting at once one key wins and
// neither ever reads a half-written file.
func devKey(path string, generate func() []byte, parse func(string) ([]byte, error)) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		k, err := parse(string(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %s", path, askbi.ErrorMessage(err))
		}
		return k, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".key-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	k := generate()
	_, err = f.WriteString(base64.StdEncoding.EncodeToString(k) + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o600)
	}
	if err != nil {
		return nil, err
	}
	if err := os.Link(f.Name(), path); errors.Is(err, os.ErrExist) {
		return devKey(path, generate, parse) // another process made it first
	} else if err != nil {
		return nil, err
	}
	return k, nil
}
