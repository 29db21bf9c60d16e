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
