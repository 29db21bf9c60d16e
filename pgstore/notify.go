package pgstore

import (
	"context"
	"crypto/rand"
	"log/slog"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/askbi/askbi/access"
)

// ChangesChannel is the PostgreSQL channel on which the stores announce
// the changes other instances may hold in memory: a key revoked
// ("key:<id>"), the workspace catalog written ("catalog"), a member
// changed ("member"), a team's remote connections changed
// ("connection:<origin>:<team>", see [ConnectionChanges]). A store sends
// its notification in the statement or transaction of the change, so it
// is delivered when, and only when, the change commits.
const ChangesChannel = "askbi_changes"

// Change is one notification on [ChangesChannel]. Missed is true instead
// when notifications may have been lost (the listening connection was
// down): a receiver then forgets everything it keeps.
type Change struct {
	Kind string // "key", "catalog", "member", "connection"
	ID   string // the key's ID for "key", the team's for "connection"
	// Origin is the instance a "connection" change came from.
	Origin string
	Missed bool
	// Down is set instead when the listening connection was lost:
	// notifications may be lost until the Missed change of its
	// reconnect.
	Down bool
}

// Listen receives the changes on [ChangesChannel] of the database at url,
// through a connection of its own (lib/pq's Listener, which reconnects),
// and passes each to handle, in order, until ctx ends. A lost listening
// connection is one Change with Down set, and its reconnect one with
// Missed set, logged once handled; handle must be safe for concurrent
// use, as Down comes from the listener's own goroutine. A receiver keeps its
// own expiry (the key cache's 30 s, say) as the bound for a notification
// that is lost anyway. Listen returns once listening has started, or the
// first error.
func Listen(ctx context.Context, url string, log *slog.Logger, handle func(Change)) error {
	l := pq.NewListener(url, 100*time.Millisecond, 5*time.Second, func(ev pq.ListenerEventType, err error) {
		if ev == pq.ListenerEventDisconnected {
			handle(Change{Down: true})
		}
		if err != nil {
			log.Warn("pgstore: change notifications: the listening connection failed; caches expire on their own meanwhile", "err", err)
		}
	})
	if err := l.Listen(ChangesChannel); err != nil {
		l.Close()
		return err
	}
	go func() {
		defer l.Close()
		ping := time.NewTicker(30 * time.Second)
		defer ping.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case n := <-l.Notify:
				if n == nil {
					// lib/pq sends nil once after each reconnect (and
					// only then): what was sent meanwhile is lost.
					handle(Change{Missed: true})
					log.Info("pgstore: change notifications: listening again; what changed meanwhile is missed, so the receiver forgot what it keeps")
					continue
				}
				kind, id, _ := strings.Cut(n.Extra, ":")
				c := Change{Kind: kind, ID: id}
				if kind == "connection" {
					c.Origin, c.ID, _ = strings.Cut(id, ":")
				}
				handle(c)
			case <-ping.C:
				// A dead connection is found by using it.
				go l.Ping()
			}
		}
	}()
	return nil
}

// notifySQL sends a change notification; $1 is its payload.
const notifySQL = `SELECT pg_notify('` + ChangesChannel + `', $1)`

// ForgetCaches is the handle of Listen for one instance's caches: a
// revoked key leaves keys, a written catalog and a changed member make
// catalog and dir read again, and missed notifications empty all three.
// A nil one is left out.
func ForgetCaches(keys *access.Keys, catalog *Catalog, dir *Directory) func(Change) {
	return func(c Change) {
		if keys != nil && (c.Missed || c.Kind == "key") {
			if c.Missed {
				keys.ForgetAll()
			} else {
				keys.Forget(c.ID)
			}
		}
		if catalog != nil && (c.Missed || c.Kind == "catalog") {
			catalog.Forget()
		}
		if dir != nil && (c.Missed || c.Kind == "member") {
			dir.Forget()
		}
	}
}

// ConnectionChanges carries the changes of remote connections between
// the instances sharing a database: Publish is connections.Options.Publish,
// and Forward, a handle for Listen, hands the other instances' changes
// to the Changed of a service's connections.Records (a missed
// notification, every team's), so a chat turn using a connection stops on
// whichever instance runs it.
type ConnectionChanges struct {
	db     *sqlx.DB
	origin string // this instance, to skip its own changes
}

// NewConnectionChanges returns the change feed of connections on db.
func NewConnectionChanges(db *sqlx.DB) *ConnectionChanges {
	return &ConnectionChanges{db: db, origin: rand.Text()[:12]}
}

// Publish announces a change of team teamID's connections.
func (c *ConnectionChanges) Publish(ctx context.Context, teamID string) error {
	_, err := c.db.ExecContext(ctx, notifySQL, "connection:"+c.origin+":"+teamID)
	return err
}

// Forward returns the handle of Listen that passes the changes other
// instances published to svc.
func (c *ConnectionChanges) Forward(svc interface{ Changed(teamID string) }) func(Change) {
	return func(ch Change) {
		switch {
		case ch.Missed:
			svc.Changed("")
		case ch.Kind == "connection" && ch.Origin != c.origin:
			svc.Changed(ch.ID)
		}
	}
}
