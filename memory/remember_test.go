package memory_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/askbi/askbi/memory"
)

func TestParseRemember(t *testing.T) {
	type result struct {
		Text string
		OK   bool
	}
	for _, tc := range []struct {
		message string
		want    result
	}{
		{"/remember our fiscal year starts in April", result{"our fiscal year starts in April", true}},
		{"/remember\tweeks start on Monday  ", result{"weeks start on Monday", true}},
		{"/remember\nline one\nline two", result{"line one\nline two", true}},
		{"  /remember leading space is fine", result{"leading space is fine", true}},
		{"/remember\u00a0non-breaking space", result{"non-breaking space", true}},
		{"/remember", result{"", true}},
		{"/remember   \n ", result{"", true}},
		{"/remembering things", result{}},
		{"/Remember case matters", result{}},
		{"/REMEMBER case matters", result{}},
		{"please /remember this", result{}},
		{"remember this", result{}},
		{"", result{}},
		{"/forget it", result{}},
	} {
		t.Run(tc.message, func(t *testing.T) {
			text, ok := memory.ParseRemember(tc.message)
			if diff := cmp.Diff(tc.want, result{text, ok}); diff != "" {
				t.Errorf("ParseRemember(%q) mismatch (-want +got):\n%s", tc.message, diff)
			}
		})
	}
}
