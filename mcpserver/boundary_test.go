package mcpserver_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBoundary: the MCP path never calls a model, never creates a
// conversation and never reads memory, because it cannot reach the
// packages that do.
func TestBoundary(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/askbi/askbi/mcpserver").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/askbi/askbi/ask") || strings.HasPrefix(dep, "github.com/askbi/askbi/memory") ||
			strings.Contains(dep, "openai-go") || strings.Contains(dep, "anthropic-sdk-go") {
			t.Errorf("mcpserver depends on %s", dep)
		}
	}
}
