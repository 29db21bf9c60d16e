package askeval_test

import (
	"strconv"

	"github.com/google/go-cmp/cmp/cmpopts"
)

var cmpEmpty = cmpopts.EquateEmpty()

func strconvF(f float64) string { return strconv.FormatFloat(f, 'f', 6, 64) }
