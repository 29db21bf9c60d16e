package ask

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
)

// ToolSource supplies tools beyond the Registry's, per turn: for the
// reference server, the remote MCP tools an admin approved for the live
// principal's team ([RemoteTools]). The allowlist stays explicit: the
// model sees the Registry's tools and what the source returns for this
// principal now, nothing else. Implementations must be safe for
// concurrent use.
type ToolSource interface {
	// Tools returns the extra tools for live principal p, and a channel
	// that is closed when what they rest on changes (a connection edited
	// or deleted, an approval changed): a turn offering them stops. A nil
	// channel never closes.
	Tools(ctx context.Context, p access.Principal) ([]Tool, <-chan struct{}, error)
}

// toolbox is the tools of one turn: the Registry's, then the source's.
// A source tool whose name the Registry already has, or that does not
// pass the Registry's checks, is left out (and logged).
type toolbox struct {
	reg     *Registry
	extra   *Registry
	changed <-chan struct{}
}

// errToolsChanged is the cause a turn stops with when its tools changed.
var errToolsChanged = errors.New("the turn's tools changed")

// toolbox returns the tools of a turn for live principal p.
func (a *Assistant) toolbox(ctx context.Context, p access.Principal) (*toolbox, error) {
	tb := &toolbox{reg: a.tools, extra: &Registry{schemas: map[string]*jsonschema.Resolved{}}}
	if a.o.Tools == nil {
		return tb, nil
	}
	tools, changed, err := a.o.Tools.Tools(ctx, p)
	if err != nil {
		return nil, err
	}
	tb.changed = changed
	for _, t := range tools {
		if _, taken := a.tools.Tool(t.Name); taken {
			a.o.Logger.Warn("ask: a source tool's name is taken by a registered tool; left out", "tool", t.Name)
			continue
		}
		if err := tb.extra.add(t); err != nil {
			a.o.Logger.Warn("ask: a source tool was left out", "tool", t.Name, "err", err)
		}
	}
	return tb, nil
}

func (tb *toolbox) Tool(name string) (Tool, bool) {
	if t, ok := tb.reg.Tool(name); ok {
		return t, true
	}
	return tb.extra.Tool(name)
}

// lookup is Registry.lookup over both.
func (tb *toolbox) lookup(name string) (Tool, bool) {
	if t, ok := tb.Tool(name); ok {
		return t, true
	}
	return tb.reg.lookup(name)
}

func (tb *toolbox) validate(name string, args json.RawMessage) error {
	if _, ok := tb.reg.Tool(name); ok {
		return tb.reg.validate(name, args)
	}
	return tb.extra.validate(name, args)
}

func (tb *toolbox) specs(headless bool) []ToolSpec {
	return append(tb.reg.specs(headless), tb.extra.specs(headless)...)
}

// watch stops ctx, with cause errToolsChanged, when the turn's tools
// change. The returned function releases the watch.
func (tb *toolbox) watch(ctx context.Context) (context.Context, func()) {
	if tb.changed == nil {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	stop := make(chan struct{})
	go func() {
		select {
		case <-tb.changed:
			cancel(errToolsChanged)
		case <-stop:
		case <-ctx.Done():
		}
	}()
	return ctx, func() { close(stop); cancel(nil) }
}

// aborted returns the error of a turn whose tools changed.
func aborted(ctx context.Context) error {
	if errors.Is(context.Cause(ctx), errToolsChanged) {
		return askbi.Errorf(askbi.Conflict, "a connection or tool approval this request used changed, so it was stopped; ask again")
	}
	return nil
}
