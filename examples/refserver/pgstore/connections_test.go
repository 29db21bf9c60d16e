package pgstore_test

import (
	"testing"

	"github.com/askbi/askbi/dataexec/mcpsource"
	"github.com/askbi/askbi/dataexec/mcpsource/mcpsourcetest"
	"github.com/askbi/askbi/examples/refserver/pgstore"
)

func TestConnectionStore(t *testing.T) {
	mcpsourcetest.Run(t, func(t *testing.T) mcpsource.Store { return pgstore.NewConnectionStore(MustStore(t)) })
}

func TestFlowStore(t *testing.T) {
	mcpsourcetest.RunFlows(t, func(t *testing.T) mcpsource.FlowStore { return pgstore.NewFlowStore(MustStore(t)) })
}
