// Package chartimage draws the optional [PNG] of mcpserver's
// create_chart_preview with gonum/plot. It is a package of its own so that a
// host that offers no chart images does not link gonum: a host opts in with
// mcpserver.Options.ChartImage.
//
//	srv := mcpserver.New(exec, gate, authn, &mcpserver.Options{ChartImage: chartimage.PNG})
package chartimage

import (
	"bytes"
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/askbi/askbi/dataexec"
	"github.com/askbi/askbi/workspace"
)

// MaxBytes caps a [PNG] that PNG returns.
const MaxBytes = 256 << 10

var palette = []color.Color{
	color.RGBA{0x25, 0x63, 0xeb, 0xff}, color.RGBA{0xea, 0x58, 0x0c, 0xff},
	color.RGBA{0x16, 0xa3, 0x4a, 0xff}, color.RGBA{0x93, 0x33, 0xea, 0xff},
	color.RGBA{0xdc, 0x26, 0x26, 0xff},
}

// PNG draws chart data as a PNG of at most [MaxBytes], smaller when a large
// one would pass it. Line and area charts are drawn as lines, every other
// type as grouped bars. It fails for chart data with no labels or no series.
// It has the shape of mcpserver.Options.ChartImage and is safe for
// concurrent use.
func PNG(title string, cd *dataexec.ChartData) ([]byte, error) {
	p := plot.New()
	p.Title.Text = title
	p.Legend.Top = true
	n := len(cd.Labels)
	if n == 0 || len(cd.Series) == 0 {
		return nil, fmt.Errorf("no data to draw")
	}
	p.NominalX(cd.Labels...)
	width := vg.Points(20)
	for i, s := range cd.Series {
		vals := make(plotter.Values, n)
		xy := make(plotter.XYs, n)
		for j := range n {
			if j < len(s.Values) && s.Values[j] != nil {
				vals[j] = *s.Values[j]
			}
			xy[j] = plotter.XY{X: float64(j), Y: vals[j]}
		}
		c := palette[i%len(palette)]
		switch cd.Type {
		case workspace.ChartLine, workspace.ChartArea:
			l, err := plotter.NewLine(xy)
			if err != nil {
				return nil, err
			}
			l.Color = c
			l.Width = vg.Points(2)
			p.Add(l)
			p.Legend.Add(s.Name, l)
		default:
			b, err := plotter.NewBarChart(vals, width)
			if err != nil {
				return nil, err
			}
			b.Color = c
			b.LineStyle.Width = 0
			b.Offset = width * vg.Length(float64(i)-float64(len(cd.Series)-1)/2)
			p.Add(b)
			p.Legend.Add(s.Name, b)
		}
	}
	for _, size := range []vg.Length{8 * vg.Inch, 6 * vg.Inch, 4 * vg.Inch} {
		wt, err := p.WriterTo(size, size*5/8, "png")
		if err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		if _, err := wt.WriteTo(&buf); err != nil {
			return nil, err
		}
		if buf.Len() <= MaxBytes {
			return buf.Bytes(), nil
		}
	}
	return nil, fmt.Errorf("image larger than %d bytes", MaxBytes)
}
