package mcpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askbi/askbi"
	"github.com/askbi/askbi/access"
)

// TasksExtension is the identifier of the MCP Tasks extension (SEP-2663,
// official with revision 2026-07-28): a tools/call may be answered with
// a task, which the client polls (tasks/get) or cancels (tasks/cancel).
const TasksExtension = "io.modelcontextprotocol/tasks"

// The Tasks extension's methods.
const (
	methodGetTask    = "tasks/get"
	methodUpdateTask = "tasks/update"
	methodCancelTask = "tasks/cancel"
)

// Task defaults (TaskOptions).
const (
	DefaultTaskAfter        = 5 * time.Second
	DefaultTaskTTL          = 10 * time.Minute
	DefaultTaskPollInterval = time.Second
	DefaultTaskHeartbeat    = 5 * time.Second
	DefaultTasksPerOwner    = 16
)

// staleBeats is how many heartbeats a working task may miss before it
// reads failed: the instance running it stopped.
const staleBeats = 6

// TaskOptions configures long-running data calls as tasks (the Tasks
// extension). run_dataset, get_chart_data and explore_data's preview
// become tasks for a client that declares the extension on its request,
// when they run longer than After; every other call, and every call of
// a client that does not declare it, is answered as before. A task's
// work is the call's own: the same gate charge (one, when it starts),
// the executor's concurrency bounds and deadline, and the same bounded
// answer. The zero value is valid; each zero field means its default.
type TaskOptions struct {
	// Disabled turns tasks off: the extension is not declared, and every
	// call stays a call.
	Disabled bool
	// Store keeps the tasks, where every instance of the server sees
	// them (pgstore's TaskStore for several instances on one database).
	// Default NewMemoryTaskStore(0): this process only.
	Store TaskStore
	// After is how long a call runs before it becomes a task: well below
	// a client's request timeout, above most calls. Default
	// DefaultTaskAfter (5 seconds).
	After time.Duration
	// TTL is how long a task and its result are kept from its creation
	// (the task's ttlMs); tasks/get answers not found after it. Default
	// DefaultTaskTTL (10 minutes).
	TTL time.Duration
	// PollInterval is the polling interval the server suggests
	// (pollIntervalMs). Default DefaultTaskPollInterval (1 second).
	PollInterval time.Duration
	// Heartbeat is how often the instance running a task records that it
	// still runs it, and looks for a cancel that another instance
	// received: a cancel through another instance stops the query within
	// it. A task whose instance missed six heartbeats reads failed.
	// Default DefaultTaskHeartbeat (5 seconds).
	Heartbeat time.Duration
	// PerOwner bounds the tasks one principal (a credential of a user in
	// a team) keeps at once, working or with a result not yet expired;
	// past it a call stays a call. Default DefaultTasksPerOwner (16).
	PerOwner int
}

// tasks runs calls as tasks for one Server. It is safe for concurrent
// use.
type tasks struct {
	o   TaskOptions
	now func() time.Time
	log *slog.Logger

	mu      sync.Mutex
	running map[string]context.CancelFunc // the tasks this instance runs
}

func newTasks(o TaskOptions, now func() time.Time, log *slog.Logger) *tasks {
	if o.Store == nil {
		o.Store = NewMemoryTaskStore(0)
	}
	if o.After <= 0 {
		o.After = DefaultTaskAfter
	}
	if o.TTL <= 0 {
		o.TTL = DefaultTaskTTL
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultTaskPollInterval
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = DefaultTaskHeartbeat
	}
	if o.PerOwner <= 0 {
		o.PerOwner = DefaultTasksPerOwner
	}
	return &tasks{o: o, now: now, log: log, running: map[string]context.CancelFunc{}}
}

// PurgeTasks is the retention step of tasks: it deletes the expired ones
// (TaskStore.Purge). Hosts run it periodically, as the OAuth one.
func (s *Server) PurgeTasks(ctx context.Context) (int, error) {
	if s.tasks == nil {
		return 0, nil
	}
	return s.tasks.o.Store.Purge(ctx, s.opts.Now().UTC())
}

// taskOwner is the owner of p's tasks: its team, user and credential,
// as a JSON array (text, unambiguous whatever the IDs hold). A task's
// result was made under that credential's scopes and projects, so
// another credential of the same user does not see it.
func taskOwner(p access.Principal) string {
	b, _ := json.Marshal([]string{p.TeamID, p.UserID, string(p.Auth), p.CredentialID})
	return string(b)
}

// tasksDeclared reports whether req declares the Tasks extension in its
// own per-request client capabilities, the only declaration that counts
// (SEP-2663: never a CreateTaskResult to a request without it).
func tasksDeclared(req mcp.Request) bool {
	p := req.GetParams()
	if p == nil || reflect.ValueOf(p).IsNil() { // a typed nil: no params
		return false
	}
	caps, _ := p.GetMeta()[mcp.MetaKeyClientCapabilities].(map[string]any)
	ext, _ := caps["extensions"].(map[string]any)
	_, ok := ext[TasksExtension].(map[string]any)
	return ok
}

// taskable reports whether call may become a task: run_dataset,
// get_chart_data, and explore_data's preview (not its save, a write, nor
// its inspection).
func taskable(call *mcp.CallToolRequest) bool {
	d, ok := toolByName(call.Params.Name)
	return ok && d.task != nil && d.task(call.Params.Arguments)
}

// errTasksUndeclared is the answer to a tasks/ method whose request does
// not declare the extension (SEP-2663: -32021, naming it).
func errTasksUndeclared() error {
	// mcp.MissingRequiredClientCapabilityData would add an empty roots
	// capability (the go-sdk's encoding of ClientCapabilities).
	data := json.RawMessage(`{"requiredCapabilities":{"extensions":{"` + TasksExtension + `":{}}}}`)
	return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities,
		Message: "Missing required client capability: declare the " + TasksExtension + " extension on the request", Data: data}
}

// callOutcome is what a call answered.
type callOutcome struct {
	res mcp.Result
	err error
}

// callAsTask runs a tools/call of a client that declared the Tasks
// extension. An answer within After is returned as the call's, exactly
// as to any client. Past After the call becomes a task: its record is
// stored (so that tasks/get finds it before the client knows its ID),
// the client gets the CreateTaskResult, and the work goes on detached
// from the request until it ends, is cancelled (tasks/cancel, here or
// through another instance) or meets the executor's deadline. Until the
// task exists a hang-up ends the work, as it ends any call; when no task
// can be stored (the owner keeps PerOwner already, the store is down)
// the call stays a call.
func (s *Server) callAsTask(ctx context.Context, method string, call *mcp.CallToolRequest, next mcp.MethodHandler) (mcp.Result, error) {
	work, cancel := context.WithCancel(context.WithoutCancel(ctx))
	untie := func() bool { return true }
	if rc, ok := ctx.Value(requestKey{}).(context.Context); ok {
		untie = context.AfterFunc(rc, cancel)
	}
	done := make(chan callOutcome, 1)
	go func() {
		res, err := s.callTool(work, method, call, next)
		done <- callOutcome{res, err}
	}()
	wait := func() (mcp.Result, error) {
		o := <-done
		untie()
		cancel()
		return o.res, o.err
	}
	timer := time.NewTimer(s.tasks.o.After)
	defer timer.Stop()
	select {
	case o := <-done:
		untie()
		cancel()
		return o.res, o.err
	case <-timer.C:
	}
	if !untie() {
		return wait() // the client hung up: the work is ending, as a call's
	}
	p, _ := principalOf(call.Extra)
	t, err := s.tasks.create(ctx, p, call.Params.Name)
	if err != nil {
		if askbi.ErrorCode(err) != askbi.RateLimited {
			s.opts.Logger.Warn("mcpserver: a call could not become a task; it stays a call", "tool", call.Params.Name, "err", err)
		}
		if rc, ok := ctx.Value(requestKey{}).(context.Context); ok {
			untie = context.AfterFunc(rc, cancel)
		}
		return wait()
	}
	s.tasks.start(t, done, cancel)
	return &createTaskResult{ResultType: "task", taskWire: s.tasks.wire(t)}, nil
}

// create stores a new working task of p for tool.
func (tk *tasks) create(ctx context.Context, p access.Principal, tool string) (Task, error) {
	b := make([]byte, 16)
	rand.Read(b)
	now := tk.now().UTC()
	t := Task{ID: "task_" + base64.RawURLEncoding.EncodeToString(b), Owner: taskOwner(p), Tool: tool, Status: TaskWorking,
		Message: "The query is running; poll tasks/get for its result.", CreatedAt: now, UpdatedAt: now,
		ExpiresAt: now.Add(tk.o.TTL), Heartbeat: now}
	return t, tk.o.Store.Create(ctx, t, tk.o.PerOwner)
}

// start follows task t, whose work answers on done: it records the
// outcome when the work ends, and beats meanwhile; a beat that finds the
// task cancelled (through another instance) or gone ends the work, as a
// local tasks/cancel does at once.
func (tk *tasks) start(t Task, done <-chan callOutcome, cancel context.CancelFunc) {
	tk.mu.Lock()
	tk.running[t.ID] = cancel
	tk.mu.Unlock()
	go func() {
		defer func() {
			tk.mu.Lock()
			delete(tk.running, t.ID)
			tk.mu.Unlock()
			cancel()
		}()
		beat := time.NewTicker(tk.o.Heartbeat)
		defer beat.Stop()
		for {
			select {
			case o := <-done:
				tk.finish(t, o)
				return
			case <-beat.C:
				// A store that does not answer within a heartbeat is asked
				// again at the next.
				ctx, stop := context.WithTimeout(context.Background(), tk.o.Heartbeat)
				st, err := tk.o.Store.Beat(ctx, t.ID, tk.now().UTC())
				stop()
				if err == nil && st != TaskWorking || askbi.ErrorCode(err) == askbi.NotFound {
					cancel()
				}
			}
		}
	}()
}

// finish records the outcome o of task t: completed with the tool
// result (an error result too), or failed with a JSON-RPC error. A task
// cancelled meanwhile stays cancelled (Conflict).
func (tk *tasks) finish(t Task, o callOutcome) {
	t.UpdatedAt = tk.now().UTC()
	t.Status, t.Message = TaskCompleted, "The query finished."
	if o.err == nil {
		var err error
		if t.Result, err = json.Marshal(o.res); err != nil {
			o.err = err
		}
	}
	if o.err != nil {
		t.Status, t.Message, t.Result = TaskFailed, "The call failed.", nil
		t.Error = rpcErrorJSON(o.err)
	}
	// A store that cannot be reached now is tried twice more; a task
	// whose outcome is lost reads failed once its heartbeats are stale.
	var err error
	for try := range 3 {
		ctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
		err = tk.o.Store.Finish(ctx, t)
		stop()
		if askbi.ErrorCode(err) != askbi.Unavailable {
			break
		}
		time.Sleep(time.Duration(try+1) * time.Second)
	}
	if err != nil && askbi.ErrorCode(err) != askbi.Conflict {
		tk.log.Error("mcpserver: a task's outcome could not be stored", "task", t.ID, "err", err)
	}
}

// rpcErrorJSON is err as the JSON of a JSON-RPC error: its own when it is
// one, else internal error.
func rpcErrorJSON(err error) json.RawMessage {
	je, ok := err.(*jsonrpc.Error)
	if !ok {
		je = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
	}
	b, _ := json.Marshal(je)
	return b
}

// cancelLocal ends the work of task id when this instance runs it.
func (tk *tasks) cancelLocal(id string) {
	tk.mu.Lock()
	cancel := tk.running[id]
	tk.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// taskWire is a Task as the extension sends it.
type taskWire struct {
	TaskID         string     `json:"taskId"`
	Status         TaskStatus `json:"status"`
	StatusMessage  string     `json:"statusMessage,omitempty"`
	CreatedAt      string     `json:"createdAt"`
	LastUpdatedAt  string     `json:"lastUpdatedAt"`
	TTLMs          int64      `json:"ttlMs"`
	PollIntervalMs int64      `json:"pollIntervalMs,omitempty"`
}

const wireTime = "2006-01-02T15:04:05.000Z07:00"

func (tk *tasks) wire(t Task) taskWire {
	w := taskWire{TaskID: t.ID, Status: t.Status, StatusMessage: t.Message, CreatedAt: t.CreatedAt.UTC().Format(wireTime),
		LastUpdatedAt: t.UpdatedAt.UTC().Format(wireTime), TTLMs: t.ExpiresAt.Sub(t.CreatedAt).Milliseconds()}
	if t.Status == TaskWorking {
		w.PollIntervalMs = tk.o.PollInterval.Milliseconds()
	}
	return w
}

// createTaskResult answers a tools/call that became a task
// (CreateTaskResult: resultType "task", the task's fields at the top).
type createTaskResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
	taskWire
}

// getTaskResult answers tasks/get (a DetailedTask): the task, with the
// tool result inlined once completed, or the JSON-RPC error once failed.
type getTaskResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
	taskWire
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

// ackResult is the empty acknowledgement of tasks/update and
// tasks/cancel.
type ackResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
}

// taskParams are the params of the tasks/ methods.
type taskParams struct {
	mcp.ParamsBase
	TaskID string `json:"taskId"`
	// InputResponses of tasks/update are ignored: no askbi task asks for
	// input, so no key is ever outstanding.
	InputResponses map[string]json.RawMessage `json:"inputResponses,omitempty"`
}

// errTaskNotFound answers a task ID that is unknown, another principal's
// or expired, alike (-32602, as SEP-2663 asks).
func errTaskNotFound() error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Failed to retrieve task: task not found"}
}

// addTaskMethods registers the extension's methods. The middleware
// passes them the live principal after the gate (they come only from
// requests that declare the extension).
func (s *Server) addTaskMethods() {
	owner := func(ctx context.Context) (string, error) {
		p, ok := access.FromContext(ctx)
		if !ok || !p.IsLive() {
			return "", &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
		}
		return taskOwner(p), nil
	}
	get := func(ctx context.Context, _ *mcp.ServerSession, params *taskParams) (*getTaskResult, error) {
		who, err := owner(ctx)
		if err != nil {
			return nil, err
		}
		return s.tasks.get(ctx, params.TaskID, who)
	}
	update := func(ctx context.Context, _ *mcp.ServerSession, params *taskParams) (*ackResult, error) {
		who, err := owner(ctx)
		if err != nil {
			return nil, err
		}
		if _, err := s.tasks.get(ctx, params.TaskID, who); err != nil {
			return nil, err
		}
		return &ackResult{ResultType: "complete"}, nil
	}
	cancel := func(ctx context.Context, _ *mcp.ServerSession, params *taskParams) (*ackResult, error) {
		who, err := owner(ctx)
		if err != nil {
			return nil, err
		}
		err = s.tasks.o.Store.Cancel(ctx, params.TaskID, who, s.tasks.now().UTC())
		if askbi.ErrorCode(err) == askbi.NotFound {
			return nil, errTaskNotFound()
		}
		if err != nil {
			return nil, rpcError(err)
		}
		s.tasks.cancelLocal(params.TaskID)
		return &ackResult{ResultType: "complete"}, nil
	}
	for _, err := range []error{
		mcp.AddReceivingCustomMethod(s.mcp, methodGetTask, get),
		mcp.AddReceivingCustomMethod(s.mcp, methodUpdateTask, update),
		mcp.AddReceivingCustomMethod(s.mcp, methodCancelTask, cancel),
	} {
		if err != nil {
			panic(err)
		}
	}
}

// get reads task id of owner for tasks/get. A working task whose
// instance stopped beating reads failed (and is recorded so, unless it
// finished meanwhile).
func (tk *tasks) get(ctx context.Context, id, owner string) (*getTaskResult, error) {
	now := tk.now().UTC()
	t, err := tk.o.Store.Get(ctx, id, owner, now)
	if askbi.ErrorCode(err) == askbi.NotFound {
		return nil, errTaskNotFound()
	}
	if err != nil {
		return nil, rpcError(err)
	}
	if t.Status == TaskWorking && now.Sub(t.Heartbeat) > staleBeats*tk.o.Heartbeat {
		t.Status, t.Message, t.UpdatedAt = TaskFailed, "The server running this task stopped; call the tool again.", now
		t.Error = rpcErrorJSON(&jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the server running this task stopped"})
		if err := tk.o.Store.Finish(ctx, t); askbi.ErrorCode(err) == askbi.Conflict {
			if t, err = tk.o.Store.Get(ctx, id, owner, now); err != nil {
				return nil, errTaskNotFound()
			}
		}
	}
	out := &getTaskResult{ResultType: "complete", taskWire: tk.wire(t)}
	switch t.Status {
	case TaskCompleted:
		out.Result = t.Result
	case TaskFailed:
		out.Error = t.Error
	}
	return out, nil
}

// withTasksExtension declares the extension in caps, a copy the SDK made
// for this answer.
func withTasksExtension(caps *mcp.ServerCapabilities) {
	if caps != nil {
		caps.AddExtension(TasksExtension, map[string]any{})
	}
}

// checkTaskHeaders checks, for a request of revision 2026-07-28 or later
// to a tasks/ method, that its Mcp-Name header names its params.taskId
// (SEP-2663, "Streamable HTTP: Routing Headers"; the go-sdk checks
// Mcp-Name only for tools/call, resources/read and prompts/get). It
// returns the request's ID and the mismatch, or nil.
func checkTaskHeaders(r *http.Request, body []byte) (json.RawMessage, error) {
	if v := r.Header.Get("MCP-Protocol-Version"); v == "" || v < "2026-07-28" || !bytes.Contains(body, []byte(`"tasks/`)) {
		return nil, nil
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			TaskID *string `json:"taskId"`
		} `json:"params"`
	}
	// Only the extension's methods: another (tasks/result, tasks/list,
	// removed with SEP-2663) is answered Method not found, as any
	// unknown method, before anything else is checked.
	if json.Unmarshal(body, &msg) != nil || msg.Params.TaskID == nil ||
		msg.Method != methodGetTask && msg.Method != methodUpdateTask && msg.Method != methodCancelTask {
		return nil, nil
	}
	switch name := r.Header.Get("Mcp-Name"); {
	case name == "":
		return msg.ID, fmt.Errorf("missing required Mcp-Name header for method %q", msg.Method)
	case name != *msg.Params.TaskID:
		return msg.ID, fmt.Errorf("header mismatch: Mcp-Name header value %q does not match params.taskId", name)
	}
	return nil, nil
}

// writeHeaderMismatch answers 400 with the JSON-RPC error -32020, as the
// go-sdk answers its own header checks.
func writeHeaderMismatch(w http.ResponseWriter, id json.RawMessage, err error) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id,
		"error": &jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: err.Error()}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	w.Write(append(b, '\n'))
}
