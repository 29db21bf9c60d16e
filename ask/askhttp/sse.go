package askhttp

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/askbi/askbi/ask"
)

// sseHeartbeat is how often an idle SSE stream sends a comment line.
const sseHeartbeat = 15 * time.Second

// sse writes events as Server-Sent Events, with a heartbeat comment every
// sseHeartbeat while the turn is quiet. Call close when the turn ends.
type sse struct {
	mu   sync.Mutex
	w    http.ResponseWriter
	rc   *http.ResponseController
	stop chan struct{}
	done sync.WaitGroup
}

// newSSE starts an event stream on w.
func newSSE(w http.ResponseWriter) *sse {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &sse{w: w, rc: http.NewResponseController(w), stop: make(chan struct{})}
	s.rc.Flush()
	s.done.Go(func() {
		t := time.NewTicker(sseHeartbeat)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				s.write(": heartbeat\n\n")
			}
		}
	})
	return s
}

// emit writes one event.
func (s *sse) emit(e ask.Event) {
	b, err := json.Marshal(e)
	if err != nil {
		return
	}
	s.write(fmt.Sprintf("id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Type, b))
}

func (s *sse) write(frame string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// A write error means the client left; the request's context is
	// cancelled by net/http and the turn stops.
	if _, err := s.w.Write([]byte(frame)); err == nil {
		s.rc.Flush()
	}
}

// close stops the heartbeat.
func (s *sse) close() {
	close(s.stop)
	s.done.Wait()
}
