package httpserve_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/askbi/askbi/httpserve"
)

func Example() {
	dbUp := true
	ping := func(context.Context) error { // a *sql.DB's PingContext in a host
		if !dbUp {
			return errors.New("connection refused")
		}
		return nil
	}
	drain := &httpserve.Drain{}
	mux := http.NewServeMux()
	mux.Handle("GET /readyz", httpserve.NewReadiness([]httpserve.Check{{Name: "the database", Func: ping}, drain.Check()}, nil))
	mux.HandleFunc("GET /healthz", httpserve.Live)
	srv := httptest.NewServer(drain.Handler(mux)) // httpserve.NewServer(drain.Handler(mux), nil) in a host
	defer srv.Close()
	status := func(path string) int {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	fmt.Println(status("/readyz"), status("/healthz"))
	dbUp = false
	fmt.Println(status("/readyz"), status("/healthz"))
	dbUp = true
	fmt.Println(status("/readyz"))
	drain.Start() // on SIGTERM, before http.Server.Shutdown
	fmt.Println(status("/readyz"), status("/healthz"))
	// Output:
	// 200 200
	// 503 200
	// 200
	// 503 503
}

// A sign-in page redirects back only to a path on its own server.
func ExampleLocalPath() {
	for _, raw := range []string{"/dashboards/d1?tab=2", "https://bi.example/oauth/authorize?state=s", "/\t/evil.test/x", "//evil.test", "/%5Cevil.test"} {
		back, ok := httpserve.LocalPath(raw, "https://bi.example")
		if !ok {
			back = "/" // the home page
		}
		fmt.Printf("%q → %s\n", raw, back)
	}
	// Output:
	// "/dashboards/d1?tab=2" → /dashboards/d1?tab=2
	// "https://bi.example/oauth/authorize?state=s" → /oauth/authorize?state=s
	// "/\t/evil.test/x" → /
	// "//evil.test" → /
	// "/%5Cevil.test" → /
}
