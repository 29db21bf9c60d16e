package mcpserver

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
	"github.com/askbi/askbi/telemetry"
)

// measure is the outermost middleware: the span and metrics of each
// request (Options.Telemetry), with the outcome the inner middleware
// gave it. Off, it adds one nil check.
func (s *Server) measure(next mcp.MethodHandler) mcp.MethodHandler {
	tel := s.opts.Telemetry
	if tel == nil {
		return next
	}
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ctx, sp := tel.StartMCP(ctx, describe(method, req))
		res, err := next(ctx, method, req)
		sp.End(outcome(res, err))
		return res, err
	}
}

// describe is what a request's span is made of: its method, the tool of
// a tools/call (one this server offers: a name the client made up is
// left out, as it is no label of ours), the session and protocol version
// the client sent, and its _meta, which may carry a traceparent.
func describe(method string, req mcp.Request) telemetry.MCPRequest {
	r := telemetry.MCPRequest{Method: method}
	if cr, ok := req.(*mcp.CallToolRequest); ok && cr.Params != nil {
		if _, known := toolByName(cr.Params.Name); known {
			r.Tool = cr.Params.Name
		}
	}
	if extra := req.GetExtra(); extra != nil && extra.Header != nil {
		r.SessionID = extra.Header.Get("Mcp-Session-Id")
		r.ProtocolVersion = extra.Header.Get("Mcp-Protocol-Version")
	}
	r.Meta = requestMeta(req)
	return r
}

// requestMeta is req's params._meta, nil without one.
func requestMeta(req mcp.Request) map[string]any {
	p := req.GetParams()
	if p == nil {
		return nil
	}
	if v := reflect.ValueOf(p); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil
	}
	return p.GetMeta()
}

// outcome is a request's result as an error carrying its askbi code: a
// failed tool call's (its structured {code}), a JSON-RPC error's (the
// code in its data, or the JSON-RPC code's nearest), nil for success.
func outcome(res mcp.Result, err error) error {
	if err != nil {
		var je *jsonrpc.Error
		if e, ok := err.(*jsonrpc.Error); ok {
			je = e
		}
		if je == nil {
			return err
		}
		var te toolError
		if json.Unmarshal(je.Data, &te) == nil && te.Code != "" {
			return askbi.E(askbi.Code(te.Code))
		}
		switch je.Code {
		case jsonrpc.CodeInvalidParams, jsonrpc.CodeInvalidRequest:
			return askbi.E(askbi.InvalidArgument)
		case jsonrpc.CodeMethodNotFound:
			return askbi.E(askbi.Unsupported)
		}
		return askbi.E(askbi.Internal)
	}
	var r *mcp.CallToolResult
	switch x := res.(type) {
	case *mcp.CallToolResult:
		r = x
	case *encodedResult:
		r = x.CallToolResult
	}
	if r != nil && r.IsError {
		if te, ok := r.StructuredContent.(toolError); ok {
			return askbi.E(askbi.Code(te.Code))
		}
		return askbi.E(askbi.Internal)
	}
	return nil
}

// auditInitialize records the start of a client's use, initialize (or
// server/discover, its 2026-07-28 form), with the name and version the
// client gives itself (unverified, cut and cleaned): the usage view's
// connected clients.
func (s *Server) auditInitialize(ctx context.Context, method string, req mcp.Request, err error) {
	p, ok := principalOf(req.GetExtra())
	if !ok {
		return
	}
	details := map[string]string{}
	if name, version := clientInfo(method, req); name != "" {
		details["client"], details["client_version"] = name, version
	}
	s.audit.Record(ctx, p, access.ActionMCPInitialize, access.Team(p.TeamID), s.audit.Now(), err, details)
}

// clientInfo is the name and version the client of req gives itself:
// initialize's clientInfo, or the clientInfo a 2026-07-28 client puts in
// every request's _meta; "" when it gives none.
func clientInfo(method string, req mcp.Request) (name, version string) {
	var impl *mcp.Implementation
	if ip, ok := req.GetParams().(*mcp.InitializeParams); ok && method == "initialize" && ip != nil {
		impl = ip.ClientInfo
	} else if meta := requestMeta(req); meta != nil {
		switch v := meta[mcp.MetaKeyClientInfo].(type) {
		case *mcp.Implementation:
			impl = v
		case map[string]any:
			n, _ := v["name"].(string)
			ver, _ := v["version"].(string)
			impl = &mcp.Implementation{Name: n, Version: ver}
		}
	}
	if impl == nil {
		return "", ""
	}
	return clientLabel(impl.Name), clientLabel(impl.Version)
}

// clientLabel is what a client says of itself, as the usage view may
// show it: printable, at most 64 characters.
func clientLabel(s string) string {
	s = strings.Map(func(r rune) rune {
		if !unicode.IsPrint(r) {
			return -1
		}
		return r
	}, strings.TrimSpace(s))
	if r := []rune(s); len(r) > 64 {
		s = string(r[:64])
	}
	return s
}
