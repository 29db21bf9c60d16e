package chartimage_test

import (
	"bytes"
	"fmt"
	"image/png"

	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/mcpserver/chartimage"
)

// PNG draws the chart data a table reads as; mcpserver calls it the same
// way for create_chart_preview when a host sets Options.ChartImage.
func ExamplePNG() {
	cd, err := dataexec.TableChart(&dataexec.Table{
		Columns: []string{"week", "signups"},
		Rows:    [][]any{{"2026-11-02", int64(120)}, {"2026-11-09", int64(98)}, {"2026-11-16", int64(131)}},
	})
	if err != nil {
		panic(err)
	}
	b, err := chartimage.PNG("Signups", cd)
	if err != nil {
		panic(err)
	}
	img, err := png.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		panic(err)
	}
	fmt.Println(cd.Type, "chart,", img.Width, "x", img.Height, "pixels, within MaxBytes:", len(b) <= chartimage.MaxBytes)
	// Output:
	// line chart, 768 x 480 pixels, within MaxBytes: true
}
