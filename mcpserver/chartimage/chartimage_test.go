package chartimage_test

import (
	"bytes"
	"image/png"
	"testing"

	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/mcpserver/chartimage"
	"github.com/askbi/askbi/workspace"
)

func ptr(v float64) *float64 { return &v }

func TestPNG(t *testing.T) {
	labels := []string{"2026-11-02", "2026-11-09", "2026-11-16"}
	series := []dataexec.Series{{Name: "signups", Values: []*float64{ptr(120), nil, ptr(131)}}, {Name: "trials", Values: []*float64{ptr(30)}}}
	for _, typ := range []workspace.ChartType{workspace.ChartBar, workspace.ChartLine, workspace.ChartArea} {
		t.Run(string(typ), func(t *testing.T) {
			b, err := chartimage.PNG("Signups", &dataexec.ChartData{Type: typ, Labels: labels, Series: series})
			if err != nil {
				t.Fatal(err)
			}
			if len(b) > chartimage.MaxBytes {
				t.Errorf("PNG is %d bytes, more than %d", len(b), chartimage.MaxBytes)
			}
			if _, err := png.Decode(bytes.NewReader(b)); err != nil {
				t.Errorf("not a PNG: %v", err)
			}
		})
	}
}

func TestPNGNoData(t *testing.T) {
	tests := []struct {
		name string
		cd   *dataexec.ChartData
	}{
		{"no labels", &dataexec.ChartData{Type: workspace.ChartBar, Series: []dataexec.Series{{Name: "s"}}}},
		{"no series", &dataexec.ChartData{Type: workspace.ChartBar, Labels: []string{"a"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if b, err := chartimage.PNG("empty", tt.cd); err == nil {
				t.Errorf("PNG of %s = %d bytes, want an error", tt.name, len(b))
			}
		})
	}
}
