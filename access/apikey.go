package access

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"strings"
	"sync"
	"time"

	"github.com/askbi/askbi"
)

// An API key reads "askbi_" + prefix + "_" + secret. The prefix is public
// and indexes the stored key; the secret has 256 bits of entropy, so a
// single SHA-256 is a sufficient hash (no password stretching needed).
const (
	keyTag       = "askbi_"
	prefixLen    = 12 // base32 chars: 60 bits, enough to make lookups unique
	secretLen    = 52 // base32 chars of 32 random bytes
	keyLen       = len(keyTag) + prefixLen + 1 + secretLen
	maxKeyName   = 100
	touchEvery   = time.Minute
	maxKeyProjs  = 100
	keyAlphabet  = "abcdefghijklmnopqrstuvwxyz234567"
	keyIDPrefix  = "key_"
	keyIDRandLen = 16
)

var keyEncoding = base32.NewEncoding(keyAlphabet).WithPadding(base32.NoPadding)

// Key is a stored API key. It never holds the secret, only its hash.
type Key struct {
	ID         string
	Prefix     string // public lookup prefix
	Hash       []byte // SHA-256 of the whole key string
	Name       string
	UserID     string
	TeamID     string
	Scopes     []Scope
	Projects   Projects
	CreatedAt  time.Time
	LastUsedAt time.Time // zero until first use
	RevokedAt  time.Time // zero while active
}

// KeyStore stores API keys. Implementations must be safe for concurrent use;
// accesstest.RunKeyStore proves one.
type KeyStore interface {
	// Create stores k. It returns Conflict when k.ID or k.Prefix exists.
	Create(ctx context.Context, k Key) error
	// ByPrefix returns the key with prefix, or NotFound.
	ByPrefix(ctx context.Context, prefix string) (Key, error)
	// List returns the keys of user in team, newest first, revoked included.
	List(ctx context.Context, teamID, userID string) ([]Key, error)
	// Revoke marks key id revoked at t. It returns NotFound for an unknown
	// id, and leaves an already revoked key's time unchanged.
	Revoke(ctx context.Context, id string, t time.Time) error
	// Touch records that key id was used at t. It returns NotFound for an
	// unknown id.
	Touch(ctx context.Context, id string, t time.Time) error
}

// DefaultKeyCacheTTL is how long [Keys.Verify] trusts a successful
// verification without reading the store again.
const DefaultKeyCacheTTL = 30 * time.Second

// KeyOptions configures Keys. The zero value is valid.
type KeyOptions struct {
	// CacheTTL is how long a successful verification is kept in memory:
	// within it, the same key verifies without reading (or touching) the
	// KeyStore, so a client keeps being served through a short outage of
	// the database behind it. What is kept is the stored key's record
	// (ID, owner, team, scopes, projects, times) under the SHA-256 of the
	// presented key, never the key itself; failures are never kept. The
	// owner's membership is still read from the Directory on every
	// Verify. Revoke on this Keys clears the key at once; a revocation on
	// another instance takes effect here within CacheTTL, or at once when
	// the host passes it on with Forget. Default
	// DefaultKeyCacheTTL (30 s); negative turns the cache off.
	CacheTTL time.Duration
	// MaxCached bounds the verifications kept. Default 10,000.
	MaxCached int
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Keys creates, verifies and revokes API keys. It is safe for
// concurrent use.
type Keys struct {
	store KeyStore
	dir   Directory
	now   func() time.Time
	ttl   time.Duration
	max   int

	mu     sync.Mutex
	cached map[[sha256.Size]byte]cachedKey
	// gen counts revocations, so a verification that raced one is not
	// cached.
	gen uint64
}

type cachedKey struct {
	key     Key
	expires time.Time
}

// NewKeys returns a key service over store, checking live membership in dir.
// opts may be nil.
func NewKeys(store KeyStore, dir Directory, opts *KeyOptions) *Keys {
	var o KeyOptions
	if opts != nil {
		o = *opts
	}
	k := &Keys{store: store, dir: dir, now: o.Now, ttl: o.CacheTTL, max: o.MaxCached, cached: map[[sha256.Size]byte]cachedKey{}}
	if k.now == nil {
		k.now = time.Now
	}
	if k.ttl == 0 {
		k.ttl = DefaultKeyCacheTTL
	}
	if k.max <= 0 {
		k.max = 10000
	}
	return k
}

// KeyRequest describes a key to create.
type KeyRequest struct {
	Name string
	// Scopes granted. The write scopes are included only when listed.
	Scopes []string
	// Projects the key may reach; every listed project must belong to the
	// team, and the owner must have access to it.
	Projects Projects
}

// Create makes a key for live principal owner (a signed-in member acting for
// themselves) and returns the secret, shown this once, and the stored key.
// It returns InvalidArgument for a bad name, scope or project, and
// Forbidden when the owner cannot reach a requested project.
func (k *Keys) Create(ctx context.Context, owner Principal, req KeyRequest) (secret string, _ Key, err error) {
	defer askbi.Wrap(&err, "access.Keys.Create")
	if !owner.live || owner.Auth != AuthSession {
		return "", Key{}, askbi.Errorf(askbi.Forbidden, "API keys are created by a signed-in member")
	}
	name := strings.TrimSpace(req.Name)
	if name == "" || len([]rune(name)) > maxKeyName {
		return "", Key{}, askbi.Errorf(askbi.InvalidArgument, "name: must be 1 to %d characters", maxKeyName)
	}
	scopes, err := ParseScopes(req.Scopes)
	if err != nil {
		return "", Key{}, err
	}
	projects := req.Projects
	if !projects.All {
		projects = ProjectSet(projects.IDs...)
		if len(projects.IDs) == 0 {
			return "", Key{}, askbi.Errorf(askbi.InvalidArgument, "projects: choose all projects or at least one project")
		}
		if len(projects.IDs) > maxKeyProjs {
			return "", Key{}, askbi.Errorf(askbi.InvalidArgument, "projects: at most %d projects", maxKeyProjs)
		}
		for _, id := range projects.IDs {
			ok, err := k.dir.HasProject(ctx, owner.TeamID, id)
			if err != nil {
				return "", Key{}, err
			}
			if !ok {
				return "", Key{}, askbi.Errorf(askbi.InvalidArgument, "projects: unknown project %q", id)
			}
			if !owner.Projects.Contains(id) {
				return "", Key{}, askbi.Errorf(askbi.Forbidden, "projects: you do not have access to project %q", id)
			}
		}
	} else {
		projects = AllProjects()
	}
	raw := make([]byte, 32)
	rand.Read(raw)
	prefix := randomString(prefixLen)
	secret = keyTag + prefix + "_" + keyEncoding.EncodeToString(raw)
	sum := sha256.Sum256([]byte(secret))
	key := Key{
		ID:        keyIDPrefix + randomString(keyIDRandLen),
		Prefix:    prefix,
		Hash:      sum[:],
		Name:      name,
		UserID:    owner.UserID,
		TeamID:    owner.TeamID,
		Scopes:    scopes,
		Projects:  projects,
		CreatedAt: k.now().UTC(),
	}
	if err := k.store.Create(ctx, key); err != nil {
		return "", Key{}, err
	}
	return secret, key, nil
}

// Verify authenticates an API key and returns its principal, with the live
// role of its owner. Every failure (malformed, unknown, wrong secret,
// revoked, owner no longer a member) is Unauthenticated with the same
// message, so a caller learns nothing about which part failed. A key
// verified within KeyOptions.CacheTTL is answered from memory; a store
// that cannot be reached otherwise makes it Unavailable.
func (k *Keys) Verify(ctx context.Context, secret string) (_ Principal, err error) {
	defer askbi.Wrap(&err, "access.Keys.Verify")
	bad := askbi.Errorf(askbi.Unauthenticated, "invalid or revoked API key")
	prefix, ok := parseKey(secret)
	if !ok {
		return Principal{}, bad
	}
	sum := sha256.Sum256([]byte(secret))
	now := k.now()
	k.mu.Lock()
	c, hit := k.cached[sum]
	gen := k.gen
	k.mu.Unlock()
	key := c.key
	if !hit || !now.Before(c.expires) {
		key, err = k.store.ByPrefix(ctx, prefix)
		if askbi.ErrorCode(err) == askbi.NotFound {
			return Principal{}, bad
		}
		if err != nil {
			return Principal{}, err
		}
		if subtle.ConstantTimeCompare(sum[:], key.Hash) != 1 || !key.RevokedAt.IsZero() {
			return Principal{}, bad
		}
	}
	p, err := readMember(ctx, k.dir, Principal{UserID: key.UserID, TeamID: key.TeamID, Projects: key.Projects,
		Scopes: key.Scopes, Auth: AuthAPIKey, CredentialID: key.ID})
	if askbi.ErrorCode(err) == askbi.Forbidden {
		return Principal{}, bad
	}
	if err != nil {
		return Principal{}, err
	}
	if !hit || !now.Before(c.expires) {
		if now.Sub(key.LastUsedAt) >= touchEvery {
			// Recorded at most once a minute per key, to spare the store a
			// write on every call.
			if err := k.store.Touch(ctx, key.ID, now.UTC()); err != nil {
				return Principal{}, err
			}
		}
		k.remember(sum, key, gen, now)
	}
	return p, nil
}

// remember caches key for its hash sum, unless the cache is off or a
// revocation happened since gen.
func (k *Keys) remember(sum [sha256.Size]byte, key Key, gen uint64, now time.Time) {
	if k.ttl <= 0 {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.gen != gen {
		return
	}
	if len(k.cached) >= k.max {
		for s, c := range k.cached {
			if !now.Before(c.expires) {
				delete(k.cached, s)
			}
		}
		for s := range k.cached {
			if len(k.cached) < k.max {
				break
			}
			delete(k.cached, s)
		}
	}
	key.Hash, key.Name = nil, ""
	k.cached[sum] = cachedKey{key: key, expires: now.Add(k.ttl)}
}

// Revoke revokes key id on behalf of live principal p, who must own it.
// Anyone else's key is NotFound.
func (k *Keys) Revoke(ctx context.Context, p Principal, id string) (err error) {
	defer askbi.Wrap(&err, "access.Keys.Revoke")
	if !p.live || p.Auth != AuthSession {
		return askbi.Errorf(askbi.Forbidden, "API keys are revoked by a signed-in member")
	}
	keys, err := k.store.List(ctx, p.TeamID, p.UserID)
	if err != nil {
		return err
	}
	for _, key := range keys {
		if key.ID == id {
			if err := k.store.Revoke(ctx, id, k.now().UTC()); err != nil {
				return err
			}
			k.Forget(id)
			return nil
		}
	}
	return askbi.Errorf(askbi.NotFound, "API key not found")
}

// ForgetAll drops every cached verification: a host calls it when it may
// have missed revocations made elsewhere.
func (k *Keys) ForgetAll() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.gen++
	clear(k.cached)
}

// Forget drops the cached verifications of key id, so its next Verify
// reads the store: a host calls it when another instance revoked the key
// (pgstore's change notifications, say). Revoke calls it itself.
func (k *Keys) Forget(id string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.gen++
	for s, c := range k.cached {
		if c.key.ID == id {
			delete(k.cached, s)
		}
	}
}

// parseKey checks the shape of a key and returns its prefix.
func parseKey(s string) (prefix string, ok bool) {
	if len(s) != keyLen || !strings.HasPrefix(s, keyTag) || s[len(keyTag)+prefixLen] != '_' {
		return "", false
	}
	for _, c := range s[len(keyTag):] {
		if c != '_' && !strings.ContainsRune(keyAlphabet, c) {
			return "", false
		}
	}
	return s[len(keyTag) : len(keyTag)+prefixLen], true
}

func randomString(n int) string {
	b := make([]byte, (n*5+7)/8)
	rand.Read(b)
	return keyEncoding.EncodeToString(b)[:n]
}
