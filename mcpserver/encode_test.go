package mcpserver

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestEncodeData checks the OAuth team spliced into a result's object.
func TestEncodeData(t *testing.T) {
	team := &teamOut{ID: "acme", Name: "Acme"}
	tests := []struct {
		name string
		data any
		team *teamOut
		want string
	}{
		{"no team", map[string]int{"a": 1}, nil, `{"a":1}`},
		{"team", map[string]int{"a": 1}, team, `{"a":1,"team":{"id":"acme","name":"Acme"}}`},
		{"empty object", struct{}{}, team, `{"team":{"id":"acme","name":"Acme"}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := encodeData(tc.data, tc.team)
			if err != nil {
				t.Fatal(err)
			}
			if !json.Valid(got) {
				t.Fatalf("encodeData = %s, not JSON", got)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("encodeData mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
