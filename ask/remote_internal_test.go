package ask

import (
	"testing"

	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/dataexec"
)

// TestCallRight: approving a remote call needs an editor or above for a
// mutating or unknown tool, an owner or admin for a destructive one
// (seed 000), as rights of access's table.
func TestCallRight(t *testing.T) {
	for _, tc := range []struct {
		class dataexec.Class
		want  access.Right
	}{
		{dataexec.ClassReadOnly, ""},
		{dataexec.ClassMutating, access.RightCallMutatingTool},
		{dataexec.ClassUnknown, access.RightCallMutatingTool},
		{dataexec.ClassDestructive, access.RightCallDestructiveTool},
	} {
		if got := callRight(tc.class); got != tc.want {
			t.Errorf("callRight(%s) = %q, want %q", tc.class, got, tc.want)
		}
	}
}
