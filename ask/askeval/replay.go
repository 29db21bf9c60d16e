package askeval

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/ask"
)

// Transcript is a model's saved replies to one run of a case: for each
// user message of the run's conversation (its history, then the
// question), the replies of the model calls of that turn, in order.
// [Recorder] saves them; [Replay] plays them back, so that scoring is
// tested offline on a real model's answers. A reply's private reasoning
// is never saved.
type Transcript struct {
	Case string `json:"case"`
	Run  int    `json:"run"`
	// Source says where the replies came from: a model's name, or how
	// they were made when no model made them.
	Source string           `json:"source"`
	Turns  []TranscriptTurn `json:"turns"`
}

// TranscriptTurn is the replies to one user message.
type TranscriptTurn struct {
	Message string           `json:"message"`
	Replies []ask.ModelReply `json:"replies"`
}

// Replay is an [ask.Provider] that answers a [Runner]'s model calls from
// transcripts: the reply of the call's case, run (run 0's when the run
// has none), message, and step in the turn. A call outside a run, or
// one the transcripts do not cover, is InvalidResult, so that a run
// never goes on with made-up replies. It is safe for concurrent use.
type Replay struct {
	byKey map[string]Transcript
}

// NewReplay returns a Replay of ts.
func NewReplay(ts []Transcript) *Replay {
	r := &Replay{byKey: map[string]Transcript{}}
	for _, t := range ts {
		r.byKey[fmt.Sprintf("%s|%d", t.Case, t.Run)] = t
	}
	return r
}

// Complete implements [ask.Provider].
func (r *Replay) Complete(ctx context.Context, req ask.ModelRequest, onText func(string)) (ask.ModelReply, error) {
	caseID, run, ok := RunOf(ctx)
	if !ok {
		return ask.ModelReply{}, askbi.Errorf(askbi.InvalidResult, "replay: the call is not one of an evaluation run")
	}
	t, ok := r.byKey[fmt.Sprintf("%s|%d", caseID, run)]
	if !ok {
		if t, ok = r.byKey[caseID+"|0"]; !ok {
			return ask.ModelReply{}, askbi.Errorf(askbi.InvalidResult, "replay: no transcript of case %s", caseID)
		}
	}
	msg, step := messageOf(ctx), stepOf(req)
	for _, turn := range t.Turns {
		if turn.Message != msg {
			continue
		}
		if step >= len(turn.Replies) {
			return ask.ModelReply{}, askbi.Errorf(askbi.InvalidResult, "replay: the transcript of case %s has %d replies to %s, not a reply %d",
				caseID, len(turn.Replies), quote(msg, 60), step+1)
		}
		reply := turn.Replies[step]
		if onText != nil && reply.Text != "" {
			onText(reply.Text)
		}
		return reply, nil
	}
	return ask.ModelReply{}, askbi.Errorf(askbi.InvalidResult, "replay: the transcript of case %s has no turn for %s", caseID, quote(msg, 60))
}

// stepOf is how many model replies the request's turn holds already:
// the assistant messages after its last user message.
func stepOf(req ask.ModelRequest) int {
	n := 0
	for _, m := range req.Messages {
		switch m.Role {
		case ask.RoleUser:
			n = 0
		case ask.RoleAssistant:
			n++
		}
	}
	return n
}

// Recorder is an [ask.Provider] that passes each call to a model and
// keeps its replies as transcripts of a [Runner]'s runs, for [Replay]. It
// keeps the replies, never the requests (which hold the tool output the
// model was shown). It is safe for concurrent use.
type Recorder struct {
	p      ask.Provider
	source string

	mu sync.Mutex
	ts map[string]*Transcript
}

// NewRecorder returns a Recorder of p's replies, whose transcripts name
// source ("openai gpt-4o-mini", say) as where they came from.
func NewRecorder(p ask.Provider, source string) *Recorder {
	return &Recorder{p: p, source: source, ts: map[string]*Transcript{}}
}

// ReadsImages implements [ask.ImageReader] as the recorded model does.
func (r *Recorder) ReadsImages() bool {
	ir, ok := r.p.(ask.ImageReader)
	return ok && ir.ReadsImages()
}

// Complete implements [ask.Provider]: it records the reply of a call
// made in a Runner's run.
func (r *Recorder) Complete(ctx context.Context, req ask.ModelRequest, onText func(string)) (ask.ModelReply, error) {
	reply, err := r.p.Complete(ctx, req, onText)
	caseID, run, ok := RunOf(ctx)
	if err != nil || !ok {
		return reply, err
	}
	msg := messageOf(ctx)
	saved := reply
	saved.Reasoning = ""
	r.mu.Lock()
	defer r.mu.Unlock()
	key := fmt.Sprintf("%s|%d", caseID, run)
	t := r.ts[key]
	if t == nil {
		t = &Transcript{Case: caseID, Run: run, Source: r.source}
		r.ts[key] = t
	}
	if n := len(t.Turns); n == 0 || t.Turns[n-1].Message != msg {
		t.Turns = append(t.Turns, TranscriptTurn{Message: msg})
	}
	last := &t.Turns[len(t.Turns)-1]
	last.Replies = append(last.Replies, saved)
	return reply, nil
}

// Transcripts returns what was recorded, by case and run.
func (r *Recorder) Transcripts() []Transcript {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Transcript, 0, len(r.ts))
	for _, t := range r.ts {
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Case != out[j].Case {
			return out[i].Case < out[j].Case
		}
		return out[i].Run < out[j].Run
	})
	return out
}

// WriteTranscripts writes ts into dir, one indented JSON file each,
// named after its case (and its run, after the first).
func WriteTranscripts(dir string, ts []Transcript) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, t := range ts {
		name := t.Case + ".json"
		if t.Run > 0 {
			name = fmt.Sprintf("%s.run%d.json", t.Case, t.Run)
		}
		b, err := json.MarshalIndent(t, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// LoadTranscripts reads the .json transcripts in dir of fsys.
func LoadTranscripts(fsys fs.FS, dir string) ([]Transcript, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	var ts []Transcript
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		var t Transcript
		if err := json.Unmarshal(b, &t); err != nil {
			return nil, fmt.Errorf("askeval: transcript %s: %w", e.Name(), err)
		}
		ts = append(ts, t)
	}
	return ts, nil
}
