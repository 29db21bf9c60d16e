package askeval_test

import "github.com/google/go-cmp/cmp/cmpopts"

var cmpEmpty = cmpopts.EquateEmpty()
