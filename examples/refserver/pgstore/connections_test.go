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
