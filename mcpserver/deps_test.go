package mcpserver_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoGonum: the chart image is optional, so a host of mcpserver that
// does not import mcpserver/chartimage does not link gonum/plot.
func TestNoGonum(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for dep := range strings.FieldsSeq(string(out)) {
		if strings.HasPrefix(dep, "gonum.org/") {
			t.Errorf("mcpserver links %s; chart drawing belongs in mcpserver/chartimage", dep)
		}
	}
}
