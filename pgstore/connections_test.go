package pgstore_test

import (
	"testing"

	"github.com/askbi/askbi/connections"
	"github.com/askbi/askbi/connections/connectionstest"
	"github.com/askbi/askbi/connections/signin"
	"github.com/askbi/askbi/connections/signin/signintest"
	"github.com/askbi/askbi/pgstore"
)

func TestConnectionStore(t *testing.T) {
	connectionstest.Run(t, func(t *testing.T) connections.Store { return pgstore.NewConnectionStore(MustStore(t)) })
}

func TestFlowStore(t *testing.T) {
	signintest.Run(t, func(t *testing.T) signin.FlowStore { return pgstore.NewFlowStore(MustStore(t)) })
}

// TestRefreshAcrossInstances: two instances, each with its own pool on
// one database, find an OAuth connection's token refused at once; the
// shared lease lets one refresh and the other use its tokens.
func TestRefreshAcrossInstances(t *testing.T) {
	signintest.RunRefresh(t, func(t *testing.T) [2]signintest.Instance {
		dbs := mustPools(t, 2)
		var out [2]signintest.Instance
		for i, db := range dbs {
			out[i] = signintest.Instance{Store: pgstore.NewConnectionStore(db), Leases: pgstore.NewLeases(db)}
		}
		return out
	})
}
