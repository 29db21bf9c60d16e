package askhttp

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/ask"
	"github.com/askbi/askbi/internal/httpjson"
)

// Chat turns outlive a server's WriteTimeout, which guards against slow
// clients, so a turn's handler moves its connection's write deadline: to
// Options.JSONTurnDeadline for a JSON answer, and, for a stream, forward by
// Options.StreamWindow on every write. (ReadTimeout needs nothing: the
// body is read by then, and net/http watches for a client that leaves
// without a deadline.)

// streamOpenAfter is how long a stream waits for the turn's first event
// before it opens anyway (then the heartbeat keeps it alive).
const streamOpenAfter = time.Second

// runTurn runs one turn and answers it as Server-Sent Events when the
// client accepts text/event-stream, else as one JSON document
// {"events": [...]}. The request's context is the turn's: a client that
// leaves stops the model call and the queries.
//
// Errors found before the turn's first event (a bad request, an unknown
// conversation, a rate limit) answer as a normal JSON error with their
// status. Once an event was produced, the answer is 200 and a failure
// arrives as the request.failed event, last in the list or stream.
func (h *handler) runTurn(w http.ResponseWriter, r *http.Request, run func(context.Context, ask.Emit) error) {
	rc := http.NewResponseController(w)
	if !acceptsEventStream(r) {
		rc.SetWriteDeadline(time.Now().Add(h.o.JSONTurnDeadline))
		emit, events := ask.Collect()
		err := run(r.Context(), emit)
		list := events()
		if len(list) == 0 {
			if err == nil {
				err = askbi.Errorf(askbi.Internal, "the turn produced no events")
			}
			h.error(w, r, err)
			return
		}
		if err != nil && list[len(list)-1].Type != ask.EventRequestFailed {
			httpjson.LogInternal(r, h.o.Logger, err)
			list = append(list, failedAfter(list[len(list)-1], err))
		}
		httpjson.WriteJSON(w, http.StatusOK, map[string]any{"events": list})
		return
	}

	window := h.o.StreamWindow
	rc.SetWriteDeadline(time.Now().Add(window))
	s := &lazyStream{w: streamWriter{ResponseWriter: w, rc: rc, window: window}}
	s.timer = time.AfterFunc(streamOpenAfter, s.open)
	err := run(r.Context(), s.emit)
	last, opened := s.end()
	if !opened {
		if err == nil {
			err = askbi.Errorf(askbi.Internal, "the turn produced no events")
		}
		h.error(w, r, err)
		return
	}
	if err != nil && (last == nil || last.Type != ask.EventRequestFailed) {
		httpjson.LogInternal(r, h.o.Logger, err)
		prev := ask.Event{ConversationID: r.PathValue("id")} // the stream opened before any event
		if last != nil {
			prev = *last
		}
		s.sse.emit(failedAfter(prev, err))
	}
	s.sse.close()
}

// failedAfter is the request.failed event that closes a turn whose error
// came back without one.
func failedAfter(last ask.Event, err error) ask.Event {
	return ask.Event{Seq: last.Seq + 1, Type: ask.EventRequestFailed, ConversationID: last.ConversationID, TurnID: last.TurnID,
		State: ask.TurnFailed, Error: &ask.ErrorBody{Code: string(askbi.ErrorCode(err)), Message: askbi.ErrorMessage(err)}}
}

func acceptsEventStream(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			mt, _, _ := strings.Cut(part, ";")
			if strings.EqualFold(strings.TrimSpace(mt), "text/event-stream") {
				return true
			}
		}
	}
	return false
}

// lazyStream opens the SSE stream on the turn's first event, or after
// streamOpenAfter, so that errors before the turn starts can still answer
// with an HTTP status.
type lazyStream struct {
	w     http.ResponseWriter
	timer *time.Timer

	mu    sync.Mutex
	sse   *sse
	last  *ask.Event
	ended bool
}

func (s *lazyStream) open() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.openLocked()
}

func (s *lazyStream) openLocked() {
	if s.sse == nil && !s.ended {
		s.sse = newSSE(s.w)
	}
}

func (s *lazyStream) emit(e ask.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.openLocked()
	if s.sse != nil && !s.ended {
		s.sse.emit(e)
		s.last = &e
	}
}

// end stops the opening timer and reports the last event and whether the
// stream opened; after it the stream is the caller's alone.
func (s *lazyStream) end() (*ask.Event, bool) {
	s.timer.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended = true
	return s.last, s.sse != nil
}

// streamWriter moves the connection's write deadline forward on every
// write of an event stream. Unwrap lets http.ResponseController reach the
// underlying writer to flush.
type streamWriter struct {
	http.ResponseWriter
	rc     *http.ResponseController
	window time.Duration
}

func (s streamWriter) Write(b []byte) (int, error) {
	s.rc.SetWriteDeadline(time.Now().Add(s.window))
	return s.ResponseWriter.Write(b)
}

func (s streamWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
