package httpserve_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/askbi/askbi/httpserve"
)

// TestDebugLoopbackOnly: ListenDebug serves the runtime profiles on a
// loopback address and refuses any other.
func TestDebugLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "[::]:0"} {
		if srv, ln, err := httpserve.ListenDebug(addr, nil); err == nil {
			ln.Close()
			srv.Close()
			t.Errorf("ListenDebug(%q) listens on %s; want a refusal", addr, ln.Addr())
		}
	}
	srv, ln, err := httpserve.ListenDebug("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	go srv.Serve(ln)
	resp, err := http.Get("http://" + ln.Addr().String() + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(string(b), "goroutine profile: total ") {
		t.Errorf("goroutine profile: %s %.80q", resp.Status, b)
	}
}
