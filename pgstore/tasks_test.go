package pgstore_test

import (
	"testing"

	"github.com/askbi/askbi/mcpserver"
	"github.com/askbi/askbi/mcpserver/tasktest"
	"github.com/askbi/askbi/pgstore"
)

func TestTaskStore(t *testing.T) {
	tasktest.RunStore(t, func(t *testing.T) mcpserver.TaskStore { return pgstore.NewTaskStore(MustStore(t)) })
}
