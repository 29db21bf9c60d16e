package httpserve

import (
	"context"
	"log/slog"
	"time"
)

// Purge is one retention step: it deletes what expired and says how many
// it deleted. mcpserver/oauth's Server.Purge (grants and tokens) and
// connections/signin's Service.PurgeOAuth (abandoned connection sign-ins)
// are steps every host with OAuth runs.
type Purge struct {
	Name string
	Func func(ctx context.Context) (int, error)
}

// RetentionOptions configures Retain. The zero value is valid.
type RetentionOptions struct {
	// Every is the time between two runs of the steps. Default 5 min.
	Every time.Duration
	// Logger logs a step that fails, and one that deleted something with
	// how many. Default slog.Default().
	Logger *slog.Logger
}

// DefaultRetentionEvery is how often Retain runs its steps by default.
const DefaultRetentionEvery = 5 * time.Minute

// Retain runs steps now and then every opts.Every (nil for the
// defaults) until ctx ends, in order; a step that fails is logged and
// tried again at the next run, and never stops the others. It returns
// when ctx ends: run it in its own goroutine.
func Retain(ctx context.Context, steps []Purge, opts *RetentionOptions) {
	var o RetentionOptions
	if opts != nil {
		o = *opts
	}
	if o.Every <= 0 {
		o.Every = DefaultRetentionEvery
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	t := time.NewTicker(o.Every)
	defer t.Stop()
	for {
		for _, p := range steps {
			if ctx.Err() != nil {
				return
			}
			if n, err := p.Func(ctx); err != nil {
				o.Logger.Error("httpserve: retention", "step", p.Name, "err", err)
			} else if n > 0 {
				o.Logger.Info("httpserve: retention", "step", p.Name, "deleted", n)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
