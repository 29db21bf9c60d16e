package access_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
)

// TestKeepRight: the roles listed keep the right and the others lose it
// (and only it); an empty list keeps it for all; a name that is not a
// role is InvalidArgument.
func TestKeepRight(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		list string
		want map[string]askbi.Code // use_assistant by user
		code askbi.Code
	}{
		{list: "owner, editor", want: map[string]askbi.Code{"owner": "", "editor": "", "viewer": askbi.Forbidden}},
		{list: "viewer", want: map[string]askbi.Code{"owner": askbi.Forbidden, "editor": askbi.Forbidden, "viewer": ""}},
		{list: " ", want: map[string]askbi.Code{"owner": "", "editor": "", "viewer": ""}},
		{list: "owner,guest", code: askbi.InvalidArgument},
	} {
		t.Run(tc.list, func(t *testing.T) {
			withdraw, err := access.KeepRight(access.RightUseAssistant, tc.list)
			if askbi.ErrorCode(err) != tc.code {
				t.Fatalf("KeepRight(%q): %v, want code %q", tc.list, err, tc.code)
			}
			if err != nil {
				return
			}
			c := access.NewChecker(newDirectory(), &access.CheckerOptions{Withdraw: withdraw})
			got := map[string]askbi.Code{}
			for user := range tc.want {
				p := access.Principal{UserID: user, TeamID: "acme", Auth: access.AuthSession}
				got[user] = askbi.ErrorCode(c.Can(ctx, p, access.RightUseAssistant, teamAcme))
				if code := askbi.ErrorCode(c.Can(ctx, p, access.RightRead, dashGrowth)); code != "" {
					t.Errorf("%s: read = %q, want allowed", user, code)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("use_assistant mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
