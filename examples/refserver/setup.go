package main

import (
	"net/url"

	"github.com/askbi/askbi/connresolve/connhttp"
)

// connectionPage is where the OAuth callback sends the browser: the
// page's connection view for tool approval (#/connections/{id}), with
// the return in the query, which the page consumes at once.
func connectionPage(ret connhttp.OAuthReturn) string {
	u := connhttp.DefaultConnectionPage(ret)
	if ret.ConnectionID != "" {
		u += "#/connections/" + url.PathEscape(ret.ConnectionID)
	}
	return u
}
