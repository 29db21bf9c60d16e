package pgstore_test

import (
	"testing"

	"github.com/askbi/askbi/connresolve"
	"github.com/askbi/askbi/connresolve/connresolvetest"
	"github.com/askbi/askbi/pgstore"
)

func TestConnectionStore(t *testing.T) {
	connresolvetest.Run(t, func(t *testing.T) connresolve.Store { return pgstore.NewConnectionStore(MustStore(t)) })
}

func TestFlowStore(t *testing.T) {
	connresolvetest.RunFlows(t, func(t *testing.T) connresolve.FlowStore { return pgstore.NewFlowStore(MustStore(t)) })
}

// TestRefreshAcrossInstances: two instances, each with its own pool on
// one database, find an OAuth connection's token refused at once; the
// shared lease lets one refresh and the other use its tokens.
func TestRefreshAcrossInstances(t *testing.T) {
	connresolvetest.RunRefresh(t, func(t *testing.T) [2]connresolvetest.Instance {
		dbs := mustPools(t, 2)
		var out [2]connresolvetest.Instance
		for i, db := range dbs {
			out[i] = connresolvetest.Instance{Store: pgstore.NewConnectionStore(db), Leases: pgstore.NewLeases(db)}
		}
		return out
	})
}
