package remote_test

import "github.com/askbi/askbi/internal/conntest"

// Short names for the test bed's principals and remote tools (package
// conntest).
var (
	newEnv, newRemote               = conntest.NewEnv, conntest.NewRemote
	alice, eve, vic, carol          = conntest.Alice, conntest.Eve, conntest.Vic, conntest.Carol
	readOnly, mutating, destructive = conntest.ReadOnly, conntest.Mutating, conntest.Destructive
	tool, answer, objectSchema      = conntest.Tool, conntest.Answer, conntest.ObjectSchema
	contains                        = conntest.Contains
)
