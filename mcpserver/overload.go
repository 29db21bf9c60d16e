package mcpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/telemetry"
)

// DefaultMaxInFlight is the default bound on one principal's MCP
// requests in flight, from authentication until the last byte of the
// answer is written.
const DefaultMaxInFlight = 16

// The answers of the HTTP layer are JSON-RPC errors with this code and
// the askbi code in data.code, so an MCP client reads them as any other
// server error.
const codeServerError = -32000

// requestKey holds the HTTP request's own context in the context the
// go-sdk hands to tool handlers. The go-sdk detaches that context from
// the request (a client that hangs up does not cancel it) but keeps its
// values, so the middleware can tie the tool call to the request again.
type requestKey struct{}

// authKey holds the outcome of authenticate, for verify.
type authKey struct{}

type authOutcome struct {
	token string
	p     access.Principal
	err   error
}

// answerNote is where a tool call leaves, for its HTTP answer, its retry
// hint (the Retry-After header) and its result's JSON when that was
// built before (encodedResult): the go-sdk then encodes a stand-in, and
// answerWriter writes the JSON in its place.
type answerNote struct {
	seconds atomic.Int64

	mu      sync.Mutex
	standIn []byte // the stand-in as the go-sdk encodes it
	encoded []byte // what answerWriter writes in its place
}

type answerKey struct{}

// guard runs before the go-sdk's bearer check. It authenticates the
// token once (verify then reads the outcome), answers 503 with
// Retry-After while authentication cannot reach its store (logging the
// outage once, and its end once), bounds the requests one principal has
// in flight, and hands the request's context down to the tool handlers.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := bearerToken(r)
		if !ok {
			next.ServeHTTP(w, r) // the bearer check answers 401
			return
		}
		began := s.health.begin()
		p, err := s.authn(r.Context(), token)
		if err != nil && askbi.ErrorCode(err) != askbi.Unauthenticated {
			s.health.failed(token, err)
			writeRPCError(w, http.StatusServiceUnavailable, askbi.Errorf(askbi.Unavailable, "authentication is unavailable; try again shortly"))
			return
		}
		s.health.answered(token, began)
		ctx := context.WithValue(r.Context(), authKey{}, authOutcome{token: token, p: p, err: err})
		if err == nil {
			release, ok := s.inFlight.acquire(p.TeamID + "/" + p.UserID)
			if !ok {
				s.opts.Telemetry.Refused(r.Context(), telemetry.SurfaceMCP, askbi.RateLimited)
				writeRPCError(w, http.StatusTooManyRequests, askbi.Retry(askbi.RateLimited, time.Second,
					"too many requests in flight (at most %d at once); wait for an answer before sending more", s.inFlight.max))
				return
			}
			defer release()
		}
		note := &answerNote{}
		ctx = context.WithValue(ctx, answerKey{}, note)
		ctx = context.WithValue(ctx, requestKey{}, r.Context())
		next.ServeHTTP(&answerWriter{ResponseWriter: w, note: note}, r.WithContext(ctx))
	})
}

// authHealth logs when authentication cannot reach its store and when
// it can again, once each, not once per request. A success alone proves
// nothing about the store: access.Keys answers a key it verified
// moments ago from memory while the store is down. What proves that the
// store answers again is an answer other than unavailable for a token
// that failed as unavailable during this outage (no cache keeps a
// failure), to a request that began after that failure. It is safe for
// concurrent use.
type authHealth struct {
	log *slog.Logger

	mu     sync.Mutex
	down   bool
	seq    uint64                       // failures seen
	tokens map[[sha256.Size]byte]uint64 // this outage's failed tokens (by hash): seq of their last failure
}

// maxFailedTokens bounds the failed tokens an outage remembers.
const maxFailedTokens = 1024

// begin returns the mark of a request about to authenticate.
func (h *authHealth) begin() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.seq
}

// failed notes that authenticating token could not reach the store.
func (h *authHealth) failed(token string, err error) {
	sum := sha256.Sum256([]byte(token))
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	if !h.down {
		h.down = true
		h.tokens = map[[sha256.Size]byte]uint64{}
		h.log.Error("mcpserver: authentication is unavailable; answering 503 until it recovers", "err", err)
	}
	if _, ok := h.tokens[sum]; ok || len(h.tokens) < maxFailedTokens {
		h.tokens[sum] = h.seq
	}
}

// answered notes that authenticating token, begun at mark began, got an
// answer (a principal, or unauthenticated).
func (h *authHealth) answered(token string, began uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.down {
		return
	}
	if at, ok := h.tokens[sha256.Sum256([]byte(token))]; ok && began >= at {
		h.down, h.tokens = false, nil
		h.log.Info("mcpserver: authentication recovered")
	}
}

// withRequest returns ctx cancelled also when the HTTP request that
// carried the call ends (the client hung up), and the func that stops
// watching it.
func withRequest(ctx context.Context) (context.Context, context.CancelFunc) {
	rc, ok := ctx.Value(requestKey{}).(context.Context)
	if !ok {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(rc, cancel)
	return ctx, func() { stop(); cancel() }
}

// noteRetry records err's retry hint for the HTTP answer.
func noteRetry(ctx context.Context, err error) {
	if n, ok := ctx.Value(answerKey{}).(*answerNote); ok {
		if sec, ok := askbi.RetryAfter(err); ok {
			n.seconds.Store(int64(sec))
		}
	}
}

// sendEncoded returns what a tools/call answering its HTTP request
// returns to the go-sdk for res. An encodedResult's JSON goes in the
// request's answerNote and a stand-in to the go-sdk, whose JSON-RPC layer
// would otherwise scan and copy the whole answer twice (go-sdk v1.8.0
// compacts a result once to make the response and again to encode it:
// about a third of the server's CPU a 1,000-row answer). The stand-in is
// a JSON string of a random name no client can guess, so that nothing
// else in the answer can be taken for it. Anything else, or a call with
// no note (not over HTTP), is returned as it is.
func sendEncoded(ctx context.Context, res mcp.Result) mcp.Result {
	r, ok := res.(*encodedResult)
	n, noted := ctx.Value(answerKey{}).(*answerNote)
	if !ok || !noted {
		return res
	}
	standIn := []byte(`"askbi:answer:` + rand.Text() + `"`)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.encoded != nil {
		return res // one answer a request (oneMessage); never two stand-ins
	}
	n.standIn, n.encoded = standIn, r.json
	return &encodedResult{CallToolResult: r.CallToolResult, json: standIn}
}

// answerWriter adds Retry-After to an answer whose tool call noted one,
// and writes a result's JSON in place of its stand-in (sendEncoded).
type answerWriter struct {
	http.ResponseWriter
	note *answerNote
	once sync.Once
}

func (w *answerWriter) header() {
	w.once.Do(func() {
		if sec := w.note.seconds.Load(); sec > 0 {
			w.ResponseWriter.Header().Set("Retry-After", strconv.FormatInt(sec, 10))
		}
	})
}

func (w *answerWriter) WriteHeader(code int) { w.header(); w.ResponseWriter.WriteHeader(code) }

// Write writes b, with the noted result's JSON in place of its stand-in
// when b holds it. The go-sdk writes each message in one Write.
func (w *answerWriter) Write(b []byte) (int, error) {
	w.header()
	n := w.note
	n.mu.Lock()
	standIn, encoded := n.standIn, n.encoded
	at := -1
	if standIn != nil {
		if at = bytes.LastIndex(b, standIn); at >= 0 {
			n.standIn, n.encoded = nil, nil
		}
	}
	n.mu.Unlock()
	if at < 0 {
		return w.ResponseWriter.Write(b)
	}
	for _, part := range [][]byte{b[:at], encoded, b[at+len(standIn):]} {
		if _, err := w.ResponseWriter.Write(part); err != nil {
			return 0, err
		}
	}
	return len(b), nil
}

func (w *answerWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// rpcError is err as a JSON-RPC error whose data carries the askbi code,
// message and retry hint.
func rpcError(err error) *jsonrpc.Error {
	te := toolErrorOf(err)
	data, _ := json.Marshal(te)
	return &jsonrpc.Error{Code: codeServerError, Message: te.Code + ": " + te.Message, Data: data}
}

// writeRPCError answers a request the server refuses before MCP handles
// it: HTTP status, Retry-After when waiting helps, and rpcError.
func writeRPCError(w http.ResponseWriter, status int, err error) {
	writeRPC(w, status, rpcError(err), err)
}

// writeRPC writes e, the JSON-RPC error of err, as the answer to a
// request the server refuses before MCP handles it.
func writeRPC(w http.ResponseWriter, status int, e *jsonrpc.Error, err error) {
	if sec, ok := askbi.RetryAfter(err); ok && sec > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(sec))
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": e})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// inFlight counts requests in flight per principal.
type inFlight struct {
	max int
	mu  sync.Mutex
	n   map[string]int
}

func (f *inFlight) acquire(key string) (release func(), ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n[key] >= f.max {
		return nil, false
	}
	f.n[key]++
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.n[key]--; f.n[key] <= 0 {
			delete(f.n, key)
		}
	}, true
}
