package redact

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// TestHandler: nothing a record carries reaches the log unredacted: its
// message, string and error attributes, groups, attributes added with
// With, and values that print themselves.
func TestHandler(t *testing.T) {
	const key = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345"
	var buf bytes.Buffer
	log := slog.New(New().Handler(slog.NewTextHandler(&buf, nil)))
	provErr := fmt.Errorf("anthropic: 401 {\"error\":\"invalid x-api-key %s\"}", key)
	log.With("auth", "Bearer "+key).Error("call failed with "+key, "err", provErr, "body", key,
		slog.Group("req", "header", "Authorization: Bearer "+key), "v", stringer(key), "n", 3)
	log.WithGroup("g").Warn("x", "err", errors.New(key))
	out := buf.String()
	if strings.Contains(out, "abcdefghijklmnop") {
		t.Errorf("the log holds the key:\n%s", out)
	}
	if strings.Count(out, Mask) < 7 || !strings.Contains(out, "n=3") {
		t.Errorf("the log lost more than the secrets:\n%s", out)
	}
}

type stringer string

func (s stringer) String() string { return string(s) }
