package ask_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestNoTransport keeps transports out of the domain package: the chat
// API's HTTP and Server-Sent Events live in package askhttp, so ask's code
// imports no net/http.
func TestNoTransport(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{join .Imports " "}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, transport := range []string{"net/http"} {
		if slices.Contains(strings.Fields(string(out)), transport) {
			t.Errorf("package ask imports %s; transports belong in ask/askhttp", transport)
		}
	}
}
