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
