package accesstest_test

import (
	"testing"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/access/accesstest"
)

// A key store's own tests run the suite; newStore gives each subtest a
// fresh, empty store. Here it is the in-memory store; a SQL adapter
// returns one on a fresh, migrated database.
func ExampleRunKeyStore() {
	// func TestKeyStore(t *testing.T), in the store's package:
	_ = func(t *testing.T) {
		accesstest.RunKeyStore(t, func(*testing.T) access.KeyStore { return access.NewMemoryKeyStore() })
	}
}

// The suite asks for limiters of several budgets, so newLimiter builds
// one from rate and burst.
func ExampleRunRateLimiter() {
	// func TestRateLimiter(t *testing.T), in the limiter's package:
	_ = func(t *testing.T) {
		accesstest.RunRateLimiter(t, func(t *testing.T, rate float64, burst int) access.RateLimiter {
			return access.NewMemoryRateLimiter(&access.RateOptions{Rate: rate, Burst: burst})
		})
	}
}
