package mcpserver

import "github.com/askbi/askbi/dataexec"

// SetRenderer replaces s's chart image renderer (renderPNG), for the
// tests of its failures; call it before s serves.
func SetRenderer(s *Server, render func(title string, cd *dataexec.ChartData) ([]byte, error)) {
	s.render = render
}
