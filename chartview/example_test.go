package chartview_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/askbi/askbi/chartview"
)

// A host serves the component as two files beside its page, which
// imports the module: import { draw } from "/web/chart-svg.js". Browsers
// run a module only when it comes with a JavaScript type.
func Example() {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /web/chart-svg.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		w.Write(chartview.JS)
	})
	mux.HandleFunc("GET /web/chart.css", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
		w.Write(chartview.CSS)
	})

	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/web/chart-svg.js", nil))
	fmt.Println(rec.Code, rec.Header().Get("Content-Type"))
	fmt.Println("exports draw:", bytes.Contains(rec.Body.Bytes(), []byte("export function draw(")))
	fmt.Println("exports check:", bytes.Contains(rec.Body.Bytes(), []byte("export function check(")))
	// Output:
	// 200 text/javascript; charset=utf-8
	// exports draw: true
	// exports check: true
}

// A page that may load nothing else (the MCP app in an agent's chat)
// holds the component inline, as it is: neither file contains the tag
// that would end its element early, so the page's own tags are the only
// ones.
func Example_inline() {
	page := fmt.Appendf(nil, "<style>%s</style>\n<script type=\"module\">\n%s\n</script>\n", chartview.CSS, chartview.JS)
	lower := bytes.ToLower(page)
	fmt.Println("</style>:", bytes.Count(lower, []byte("</style")), "</script>:", bytes.Count(lower, []byte("</script")))
	// Output:
	// </style>: 1 </script>: 1
}
